"""A client of the scheduler's native API (``docs/api.md``), for the CLI and the notebook API.

Answers come back as typed records (``App``, ``QueueInfo``) that also keep the server's JSON
as it was sent (``raw``), so ``--json`` output is exactly the API's app object.

Every failure is a ``SchedulerError`` whose ``str()`` is one line for a user:
``Unreachable`` (no server there), ``ApiError`` (the server refused: its ``detail``).
Nothing here prints or exits; callers decide how to show errors.
"""

from __future__ import annotations

import hashlib
import os
import ssl
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import yaml

from .model import AppState

DEFAULT_SERVER = "http://127.0.0.1:6066"
SERVER_ENV = "SESSIONSCHED_SERVER"
TOKEN_ENV = "SESSIONSCHED_TOKEN"
CA_ENV = "SESSIONSCHED_CA"
CONFIG_ENV = "SESSIONSCHED_CLIENT_CONFIG"
MAX_REDIRECTS = 3


def default_server(environ: Mapping[str, str] = os.environ) -> str:
    return environ.get(SERVER_ENV) or DEFAULT_SERVER


def user_config_path(environ: Mapping[str, str] = os.environ) -> Path:
    """``$SESSIONSCHED_CLIENT_CONFIG``, else ``$XDG_CONFIG_HOME/sessionsched/client.yaml``
    (``~/.config/...``)."""
    if environ.get(CONFIG_ENV):
        return Path(environ[CONFIG_ENV])
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "sessionsched" / "client.yaml"


def user_config(environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """The user's client file (``token:``, ``ca:``), or {} when there is none. It holds a
    secret: one that others may read is refused, as ssh refuses such a key."""
    path = user_config_path(environ)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise SchedulerError(f"{path}: cannot read: {e.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SchedulerError(f"{path} is readable by others (mode {stat.S_IMODE(mode):o}) and "
                             f"holds a token; run: chmod 600 {path}")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise SchedulerError(f"{path}: not a readable YAML file ({e})") from None
    if not isinstance(data, dict):
        raise SchedulerError(f"{path}: expected a mapping (token: ..., ca: ...)")
    return data


def default_token(environ: Mapping[str, str] = os.environ) -> str | None:
    """``$SESSIONSCHED_TOKEN``, else the user config file's ``token``."""
    token = environ.get(TOKEN_ENV) or user_config(environ).get("token")
    return str(token) if token else None


def default_ca(environ: Mapping[str, str] = os.environ) -> str | None:
    """A CA bundle to verify an HTTPS server with: ``$SESSIONSCHED_CA``, else the user config
    file's ``ca`` (None: the system's trust store)."""
    ca = environ.get(CA_ENV) or user_config(environ).get("ca")
    return str(ca) if ca else None


class SchedulerError(Exception):
    """The scheduler could not do what was asked. ``str()`` is one line for a user."""


class Unreachable(SchedulerError):
    def __init__(self, server: str, why: str):
        super().__init__(f"cannot reach the scheduler at {server} ({why})")
        self.server = server
        self.why = why


class _NotConnected(Exception):
    """No connection could be made: nothing was sent (its ``__cause__`` says why)."""


class ApiError(SchedulerError):
    """A 4xx/5xx answer; ``detail`` is the server's one-line reason."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail


def parse_time(value: str | None) -> datetime | None:
    """An API timestamp (ISO 8601, ``Z`` for UTC) as an aware datetime."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@dataclass(frozen=True)
class App:
    """The API's app object (``docs/api.md``), typed. ``raw`` is the JSON as received."""

    id: str
    name: str
    user: str
    queue: str
    priority: int
    state: AppState
    position: int | None
    submitted_at: datetime | None
    started_at: datetime | None
    first_executor_at: datetime | None
    finished_at: datetime | None
    exit_code: int | None
    executors: int
    target: int
    demand: int
    spark_app_id: str | None
    kind: str
    reason: str | None
    warnings: tuple[str, ...]
    raw: dict[str, Any]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> App:
        return cls(
            id=data["id"],
            name=data.get("name") or "",
            user=data.get("user") or "",
            queue=data.get("queue") or "",
            priority=int(data["priority"]),
            state=AppState(data["state"]),
            position=data.get("position"),
            submitted_at=parse_time(data.get("submitted_at")),
            started_at=parse_time(data.get("started_at")),
            first_executor_at=parse_time(data.get("first_executor_at")),
            finished_at=parse_time(data.get("finished_at")),
            exit_code=data.get("exit_code"),
            executors=int(data.get("executors") or 0),
            target=int(data.get("target") or 0),
            demand=int(data.get("demand") or 0),
            spark_app_id=data.get("spark_app_id"),
            kind=data.get("kind") or "",
            reason=data.get("reason"),
            warnings=tuple(data.get("warnings") or ()),
            raw=data,
        )


@dataclass(frozen=True)
class QueueInfo:
    """One queue from ``GET /api/v1/queues``; ``raw`` is the JSON as received."""

    name: str
    admission: str
    policy: str
    weight: float
    pending: int
    starting: int
    running: int
    executor_cores: int
    demand_cores: int
    waiting_reason: str | None
    raw: dict[str, Any]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> QueueInfo:
        return cls(
            name=data["name"],
            admission=data.get("admission") or "",
            policy=data.get("policy") or "",
            weight=float(data.get("weight") or 0),
            pending=int(data.get("pending") or 0),
            starting=int(data.get("starting") or 0),
            running=int(data.get("running") or 0),
            executor_cores=int(data.get("executor_cores") or 0),
            demand_cores=int(data.get("demand_cores") or 0),
            waiting_reason=data.get("waiting_reason"),
            raw=data,
        )


@dataclass(frozen=True)
class Submission:
    """The body of ``POST /api/v1/apps``. ``argv`` are spark-submit's arguments without
    ``--master``; ``cwd`` is absolute so relative paths in them resolve on the server."""

    argv: tuple[str, ...]
    cwd: str
    queue: str | None = None
    priority: int | None = None
    name: str | None = None
    conf: Mapping[str, str] | None = None
    env: Mapping[str, str] | None = None
    # From another host: reference in argv -> SHA-256 (upload_file); {} when nothing is local.
    uploads: Mapping[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        body = {
            "argv": list(self.argv),
            "cwd": self.cwd,
            "queue": self.queue,
            "priority": self.priority,
            "name": self.name,
            "conf": dict(self.conf or {}),
            "env": dict(self.env or {}),
        }
        if self.uploads is not None:
            body["uploads"] = dict(self.uploads)
        return body


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
        """``server``: a URL, or several separated by commas (schedulers sharing a store, README
        "Run two schedulers"), tried in turn while one cannot be connected to, as
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
            # A standby sends every request to the leader with a 307 (README, "Run two
            # schedulers"). Followed here rather than by httpx, which would drop the token
            # on the way to another host: the server we were pointed at named the leader.
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

    # --- endpoints (docs/api.md) --------------------------------------------------------------

    def queues(self) -> list[QueueInfo]:
        return [QueueInfo.from_json(q) for q in self._json("GET", "/api/v1/queues")]

    def apps(self, queue: str | None = None, state: str | None = None) -> list[App]:
        params = {k: v for k, v in (("queue", queue), ("state", state)) if v}
        return [App.from_json(a) for a in self._json("GET", "/api/v1/apps", params=params)]

    def app(self, app_id: str) -> App:
        return App.from_json(self._json("GET", f"/api/v1/apps/{_segment(app_id)}"))

    def submit(self, submission: Submission) -> App:
        return App.from_json(self._json("POST", "/api/v1/apps", json=submission.to_json()))

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
