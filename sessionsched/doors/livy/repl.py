"""The routes a Livy session's REPL (``drivers.livy_repl``, the session's driver) talks to
the server by: ``/livy-repl/SID/ready`` once its SparkSession is up, ``next`` for the next
waiting statement (or ``{"stop": true}`` when the session is ending or its app has ended,
killed elsewhere too), ``result`` with a statement's output (dropped if the statement was
cancelled meanwhile). Only the session's own app secret (or an admin) may use them
(``auth.guard``). ``sessions``: the ``interactive.LivySessions`` whose statements they serve.
"""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sessionsched.doors.livy.answers import json_of, msg


def now_ms() -> int:
    return int(time.time() * 1000)


def repl_routes(sessions) -> list[Route]:

    async def ready(request: Request) -> Response:
        try:
            s = sessions.find(request, touch=False)
        except LookupError as e:
            return msg(str(e), 404)
        s.ready = True
        return JSONResponse({"msg": "ok"})

    async def next_statement(request: Request) -> Response:
        try:
            s = sessions.find(request, touch=False)
        except LookupError:
            return JSONResponse({"stop": True})
        app = sessions.ops.app(s.app_id)
        if s.stopping or app is None or app.state.terminal:  # killed elsewhere too
            return JSONResponse({"stop": True})
        with sessions.lock:
            for st in s.statements:
                if st["state"] == "waiting":
                    st["state"], st["started"] = "running", now_ms()
                    return JSONResponse({"id": st["id"], "code": st["code"]})
        return JSONResponse({"id": None})

    async def result(request: Request) -> Response:
        try:
            s = sessions.find(request, touch=False)
        except LookupError as e:
            return msg(str(e), 404)
        try:
            body = await json_of(request)
            if not isinstance(body, dict) or type(body.get("id")) is not int or \
                    "output" not in body:
                raise ValueError('expected {"id": STATEMENT NUMBER, "output": ...}')
        except ValueError as e:
            return msg(f"bad result: {e}", 400)
        n, output = body["id"], body["output"]
        with sessions.lock:
            if 0 <= n < len(s.statements):
                st = s.statements[n]
                cancelled = st["state"] == "cancelling"
                st.update(state="cancelled" if cancelled else "available",
                          output=None if cancelled else output, progress=1.0,
                          completed=now_ms())
                s.active_at = time.monotonic()
        return JSONResponse({"msg": "ok"})

    return [
        Route("/livy-repl/{sid}/ready", ready, methods=["POST"]),
        Route("/livy-repl/{sid}/next", next_statement, methods=["GET"]),
        Route("/livy-repl/{sid}/result", result, methods=["POST"]),
    ]
