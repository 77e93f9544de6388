"""The dashboard: static pages served by the scheduler itself, which poll the native API (no
other server, no CDN: ``static/``; docs/user/watching.md describes each view).

- ``/``: the queues (a bar per queue), the apps (filtered and searched by the server: the
  first rows that match, ``apps_page``), the cluster's workers and the usage by queue;
- ``/app/{id}``: one app: its timeline from its events, why it waits, its usage and audit rows;
- ``/static/{name}``: the pages' scripts and style; ``/static/vendor/{name}``: the charting
  library, uPlot, vendored (static/vendor/README.md).

The files are read once at import. Every page is sent with a Content-Security-Policy that lets
it load and fetch from this origin only, and run no inline script: the pages build their DOM
from text (never markup from data), and the policy keeps it so. With auth on, the page asks
for a token (or open ``/#token=TOKEN``: the fragment never reaches the server), keeps it in
the tab's sessionStorage and sends it as ``Authorization: Bearer``; an app's page changes a
priority or kills through the API's own calls, so the same rules decide and audit.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from fastapi import APIRouter, HTTPException, Request, Response

STATIC = Path(__file__).with_name("static")
TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
         ".js": "text/javascript; charset=utf-8"}
# name -> (body, media type, ETag)
FILES = {str(p.relative_to(STATIC)): (p.read_bytes(), TYPES[p.suffix],
                                     '"' + hashlib.sha256(p.read_bytes()).hexdigest()[:16] + '"')
         for p in sorted([*STATIC.iterdir(), *(STATIC / "vendor").iterdir()])
         if p.suffix in TYPES}
POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
          "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
# A new release's files are picked up at once: the browser asks again each time, and an
# unchanged file costs a 304 (its ETag: a hash of its bytes).
HEADERS = {"Content-Security-Policy": POLICY, "Cache-Control": "no-cache",
           "X-Content-Type-Options": "nosniff"}

router = APIRouter(include_in_schema=False)


def _file(request: Request, name: str) -> Response:
    found = FILES.get(name)
    if found is None:
        raise HTTPException(404, f"no dashboard file {name!r}")
    body, media_type, etag = found
    headers = {**HEADERS, "ETag": etag}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=media_type, headers=headers)


@router.get("/")
async def overview(request: Request) -> Response:
    return _file(request, "index.html")


@router.get("/app/{app_id}")
async def app_page(request: Request, app_id: str) -> Response:  # it reads its id itself
    return _file(request, "app.html")


@router.get("/static/{name}")
async def static(request: Request, name: str) -> Response:
    return _file(request, name)


@router.get("/static/vendor/{name}")
async def vendored(request: Request, name: str) -> Response:
    return _file(request, "vendor/" + name)
