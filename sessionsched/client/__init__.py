"""A client of the scheduler's native API (``docs/user/api.md``), for the CLI and the notebook API.

Answers come back as typed records (``App``, ``QueueInfo``) that also keep the server's JSON
as it was sent (``raw``), so ``--json`` output is exactly the API's app object.

Every failure is a ``SchedulerError`` whose ``str()`` is one line for a user:
``Unreachable`` (no server there), ``ApiError`` (the server refused: its ``detail``).
Nothing here prints or exits; callers decide how to show errors.

The package: ``settings`` (where the server, token and CA come from), ``errors``, ``shapes``
(the API's objects); every name is importable from ``sessionsched.client`` itself.
"""

from __future__ import annotations

import hashlib
import os
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from .errors import ApiError, SchedulerError, Unreachable
from .settings import (
    CA_ENV,
    CONFIG_ENV,
    DEFAULT_SERVER,
    MAX_REDIRECTS,
    SERVER_ENV,
    TOKEN_ENV,
    default_ca,
    default_server,
    default_token,
    user_config,
    user_config_path,
)
from .shapes import App, QueueInfo, Submission, parse_time

__all__ = [
    "CA_ENV", "CONFIG_ENV", "DEFAULT_SERVER", "MAX_REDIRECTS", "SERVER_ENV", "TOKEN_ENV",
    "ApiError", "App", "QueueInfo", "SchedulerClient", "SchedulerError", "Submission",
    "Unreachable", "default_ca", "default_server", "default_token", "file_sha256",
    "parse_time", "user_config", "user_config_path",
]


class _NotConnected(Exception):
    """No connection could be made: nothing was sent (its ``__cause__`` says why)."""


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _why(exc: httpx.TransportError) -> str:
    """A few words for a transport failure: the OS reason when there is one."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror.lower()
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    text = str(exc).strip()
    if "Connection refused" in text:
        return "connection refused"
    return text.splitlines()[0] if text else type(exc).__name__


class SchedulerClient:
    """Blocking client of ``/api/v1``. Use as a context manager or call ``close()``."""

    def __init__(
        self, server: str | None = None, token: str | None = None, timeout_s: float = 10.0,
        ca: str | None = None,
    ):
        """``server``: a URL, or several separated by commas (schedulers sharing a store,
        docs/operator/two-schedulers.md), tried in turn while one cannot be connected to, as
        spark-submit tries ``spark://a:6066,b:6066``. ``ca``: a CA bundle (PEM) to verify an
        ``https://`` server with."""
        self.servers = [u.strip().rstrip("/") for u in (server or default_server()).split(",")
                        if u.strip()] or [DEFAULT_SERVER]
        self.server = self.servers[0]  # the one that answered last
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        verify: ssl.SSLContext | bool = True
        if ca:
            try:
                verify = ssl.create_default_context(cafile=ca)
            except (OSError, ssl.SSLError) as e:
                raise SchedulerError(f"CA file {ca}: {getattr(e, 'strerror', None) or e}") \
                    from None
        self._http = httpx.Client(headers=headers, timeout=timeout_s, verify=verify)

    def __enter__(self) -> SchedulerClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _request(self, method: str, path: str, **kwargs) -> httpx.Response:
        order = [self.server] + [u for u in self.servers if u != self.server]
        for i, server in enumerate(order):
            try:
                response = self._follow(method, server, path, **kwargs)
            except _NotConnected as e:
                if i + 1 < len(order):
                    continue  # nothing was sent: the next address may be the live one
                raise Unreachable(", ".join(order) if len(order) > 1 else server,
                                  _why(e.__cause__)) from None
            self.server = server
            break
        if response.status_code >= 400:
            raise ApiError(response.status_code, _detail(response))
        return response

    def _follow(self, method: str, server: str, path: str, **kwargs) -> httpx.Response:
        url = server + path
        for _ in range(MAX_REDIRECTS + 1):
            try:
                response = self._http.request(method, url, **kwargs)
            except (httpx.InvalidURL, httpx.UnsupportedProtocol) as e:
                raise SchedulerError(f"{server} is not a valid server URL: {e}") from None
            except (httpx.ConnectError, httpx.ConnectTimeout) as e:
                if url == server + path:
                    raise _NotConnected() from e
                raise Unreachable(url.split("/api/", 1)[0], _why(e)) from None
            except httpx.TransportError as e:
                raise Unreachable(server, _why(e)) from None
            # A standby sends every request to the leader with a 307 (see
            # docs/operator/two-schedulers.md). Followed here rather than by httpx, which would
            # drop the token on the way to another host: the server we were pointed at named the
            # leader.
            if response.status_code not in (307, 308) or "location" not in response.headers:
                return response
            url = response.headers["location"]
        raise SchedulerError(f"{server}: more than {MAX_REDIRECTS} redirects")

    def _json(self, method: str, path: str, **kwargs) -> Any:
        response = self._request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise SchedulerError(
                f"{self.server}{path} did not answer JSON; is this a sessionsched server?"
            ) from None

    # --- endpoints (docs/user/api.md) -------------------------------------------------------------

    def queues(self) -> list[QueueInfo]:
        return [QueueInfo.from_json(q) for q in self._json("GET", "/api/v1/queues")]

    def health(self) -> dict[str, Any]:
        """``GET /api/v1/health``: the scheduler's state in one object (docs/user/api.md)."""
        return self._json("GET", "/api/v1/health")

    def cluster(self) -> dict[str, Any]:
        """``GET /api/v1/cluster``: the cluster (behind several, each one) as the scheduler
        last saw it."""
        return self._json("GET", "/api/v1/cluster")

    def apps(self, queue: str | None = None, state: str | None = None) -> list[App]:
        params = {k: v for k, v in (("queue", queue), ("state", state)) if v}
        return [App.from_json(a) for a in self._json("GET", "/api/v1/apps", params=params)]

    def app(self, app_id: str) -> App:
        return App.from_json(self._json("GET", f"/api/v1/apps/{_segment(app_id)}"))

    def submit(self, submission: Submission) -> App:
        return App.from_json(self._json("POST", "/api/v1/apps", json=submission.to_json()))

    def dry_run(self, submission: Submission) -> dict[str, Any]:
        """What the submission would meet now (docs/user/api.md, ``DryRunOut``); nothing stored."""
        return self._json("POST", "/api/v1/apps/dry-run", json=submission.to_json())

    def upload_file(self, path: str | Path, timeout_s: float = 600.0) -> str:
        """Store a local file on the server (``PUT /api/v1/uploads/{sha256}``) unless it has
        that content already; its SHA-256, for ``Submission.uploads``."""
        sha = file_sha256(path)
        try:
            self._request("GET", f"/api/v1/uploads/{sha}")
            return sha
        except ApiError as e:
            if e.status != 404:
                raise
        with open(path, "rb") as f:
            self._request("PUT", f"/api/v1/uploads/{sha}", content=f,
                          headers={"Content-Length": str(os.fstat(f.fileno()).st_size)},
                          timeout=httpx.Timeout(timeout_s, connect=10.0))
        return sha

    def set_priority(self, app_id: str, priority: int) -> App:
        path = f"/api/v1/apps/{_segment(app_id)}/priority"
        return App.from_json(self._json("POST", path, json={"priority": priority}))

    def kill(self, app_id: str) -> App:
        return App.from_json(self._json("POST", f"/api/v1/apps/{_segment(app_id)}/kill"))

    def events(self, app_id: str) -> list[dict[str, Any]]:
        return self._json("GET", f"/api/v1/apps/{_segment(app_id)}/events")

    def audit(self, app_id: str | None = None, user: str | None = None,
              since: str | None = None) -> list[dict[str, Any]]:
        params = {k: v for k, v in (("app", app_id), ("user", user), ("since", since)) if v}
        return self._json("GET", "/api/v1/audit", params=params)

    def usage(self, by: str = "queue", since: str | None = None,
              until: str | None = None) -> list[dict[str, Any]]:
        """What apps used, per app, queue, user or cluster (``GET /api/v1/usage``)."""
        params = {k: v for k, v in (("by", by), ("since", since), ("until", until)) if v}
        return self._json("GET", "/api/v1/usage", params=params)

    def log(self, app_id: str, tail: int = 50) -> str:
        path = f"/api/v1/apps/{_segment(app_id)}/log"
        return self._request("GET", path, params={"tail": tail}).text


def _segment(app_id: str) -> str:
    """An id as one URL path segment: a '/' or '?' in user input must not change the path."""
    return quote(app_id, safe="")


def _detail(response: httpx.Response) -> str:
    """The server's one-line reason from a 4xx/5xx answer."""
    try:
        body = response.json()
    except ValueError:
        body = None
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, list):  # FastAPI request validation: [{"loc": [...], "msg": ...}]
        first = detail[0] if detail else {}
        loc = ".".join(str(p) for p in first.get("loc", []) if p != "body")
        detail = f"{loc}: {first.get('msg', 'invalid request')}" if loc else first.get("msg")
    if not detail:
        text = response.text.strip().splitlines()
        detail = text[0] if text else response.reason_phrase
    if response.status_code >= 500:
        return f"server error {response.status_code}: {detail}"
    return str(detail)
