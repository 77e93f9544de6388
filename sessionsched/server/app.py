"""The ASGI application: the service behind FastAPI, started and stopped with the app.

``create_app(config, backend)`` builds it, entered through its front (``server/front.py``:
one table from a request to its door, the body limit applied once); ``sessionsched serve``
runs it under uvicorn.
Every refusal is a 4xx with one line naming the problem: ``{"detail": "..."}`` on the native
API (request-shape errors included: FastAPI's list of errors becomes its first line), Spark's
``ErrorResponse`` on ``/v1/submissions``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from collections.abc import Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from sessionsched.backends.base import ClusterBackend
from sessionsched.config import ServerConfig
from sessionsched.doors.common.asgi import BodyLimit
from sessionsched.doors.livy import auth as livy_auth
from sessionsched.doors.livy import door as livy
from sessionsched.doors.native import agent_api, api, dashboard, overview_api, upload_api
from sessionsched.doors.native.views import unreadable, validation_detail
from sessionsched.doors.spark_rest.rest import SparkDoor, SparkRest
from sessionsched.doors.standby.front import Standby
from sessionsched.intake import new_apps
from sessionsched.intake.guard import RateLimit
from sessionsched.intake.uploads import UploadStore
from sessionsched.model.text import one_line
from sessionsched.operations import auth
from sessionsched.operations.port import Operations
from sessionsched.server.front import App, Front
from sessionsched.server.leader import ActiveStandby
from sessionsched.service.service import Service
from sessionsched.store import StoreUnavailable

log = logging.getLogger("sessionsched.server")


class UnsafeListen(ValueError):
    """Listening beyond loopback without authentication."""


def check_listen(host: str, auth_mode: str) -> None:
    """Refuse a non-loopback address while auth is off: anyone could submit and kill."""
    if auth_mode != "none":
        return
    if host == "localhost":
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise UnsafeListen(
            f"refusing to listen on {host} with auth mode none: anyone who can reach it could "
            "submit and kill applications; use 127.0.0.1 or turn on auth.mode: tokens"
        )


def backend_for(config: ServerConfig) -> ClusterBackend:
    """The cluster backend named by ``cluster.backend`` (several: ``clusters:``)."""
    try:
        from sessionsched.backends import serving_backend  # the backends package owns the registry
    except ImportError as e:
        raise LookupError(f"no cluster backend is available ({e})") from None
    return serving_backend(config)


def unreadable_body(err: StarletteHTTPException) -> str | None:
    """One line for a body FastAPI could not even parse as JSON (``native.views.unreadable``)
    instead of its "There was an error parsing the body"; None for any other HTTP error.
    FastAPI raises those from the parser's exception (our own refusals are raised
    ``from None``)."""
    if err.status_code != 400 or err.__cause__ is None:
        return None
    return unreadable(err.__cause__)


def create_app(
    config: ServerConfig,
    backend: ClusterBackend | None = None,
    *,
    url: str | None = None,
    run_cycles: bool = True,
    clock: Callable[[], float] = time.time,
) -> FastAPI:
    """``run_cycles=False`` leaves the cycle to the caller (``app.state.service.cycle()``),
    for tests that step the scheduler by hand (with ``clock``, on a time of their own)."""
    gate = auth.Gate(config.auth, config.queues, config.server.state_dir,
                     config.defaults.priority)
    service = Service(config, backend if backend is not None else backend_for(config), url=url,
                      clock=clock)
    service.secret_for = gate.secret_for
    try:
        service.check_queues()
        active = ActiveStandby(service, config)  # leader, standby or the only scheduler
    except ValueError:
        service.stop()  # nothing started yet: closes the backend's client and the store
        raise
    try:
        active.claim()
    except ValueError:
        active.stop()
        raise
    defaults = new_apps.Defaults(
        root=config.queue_tree(), queue=config.defaults.queue, priority=config.defaults.priority,
        drivers_in_cluster=service.backend.drivers_in_cluster,
        clusters=tuple(c.name for c in config.cluster_registry()),
    )

    uploads = UploadStore(auth.uploads_root(config.server.state_dir), config.uploads, clock)

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        active.start(run_cycles=run_cycles)
        sweeper = asyncio.create_task(sweep_uploads(service, uploads))
        connect = await start_connect(config, ops)
        try:
            yield
        finally:
            if connect is not None:
                await connect.stop()
            sweeper.cancel()
            active.stop()

    app = App(
        title="sessionsched",
        description="Session scheduler for Apache Spark: native API (docs/user/api.md), the driver "
        "agent protocol, and Spark's REST submission protocol under /v1/submissions.",
        lifespan=lifespan,
    )
    app.state.service = service
    app.state.active = active
    # Every door calls this one port: who is asking, may they, the checks, the service, the wait.
    app.state.ops = ops = Operations(service, gate, RateLimit(config.auth.submissions_per_minute),
                                     defaults, uploads)
    app.state.gate = gate  # the agent secrets a launch hands out
    app.state.uploads = uploads
    app.state.spark_rest = SparkRest(ops)
    app.include_router(api.router, responses=api.AUTH_RESPONSES if gate.on else None)
    app.include_router(agent_api.router, responses=api.AUTH_RESPONSES if gate.on else None)
    app.include_router(upload_api.router, responses=api.AUTH_RESPONSES if gate.on else None)
    app.include_router(overview_api.router, responses=api.AUTH_RESPONSES if gate.on else None)
    # Apache Livy's API (batches, sessions) beside the native one: its own routes and error
    # shapes, each route behind the port's rules (``livy.auth.guard``).
    door = livy.Livy(ops)
    app.router.routes.extend(livy_auth.guard(door.routes(), ops, livy_auth.batch_app(door),
                                             livy_auth.session_app(door)))

    # Every refusal's detail goes out as one line (text.one_line), whatever user input it quotes.
    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, err: RequestValidationError):
        return JSONResponse({"detail": one_line(validation_detail(err.errors()))},
                            status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, err: StarletteHTTPException):
        detail = unreadable_body(err)
        if detail is not None:
            return JSONResponse({"detail": detail}, status_code=422)
        if isinstance(err.detail, str):
            err.detail = one_line(err.detail)
        return await http_exception_handler(request, err)

    @app.exception_handler(StoreUnavailable)
    async def _store_unavailable(_request: Request, err: StoreUnavailable):
        return JSONResponse({"detail": str(err)}, status_code=503)

    @app.exception_handler(Exception)
    async def _crash(request: Request, err: Exception):  # pragma: no cover - a bug
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse({"detail": f"internal error: {type(err).__name__}: {err}"}, 500)

    app.include_router(dashboard.router)  # its pages and files (doors/native/dashboard.py)

    app.front = front(app)
    return app


async def start_connect(config: ServerConfig, ops: Operations):
    """The Spark Connect door (``doors/connect``) when ``connect`` is configured, started on
    the server's event loop; None otherwise. Its gRPC libraries load only then."""
    if config.connect is None:
        return None
    try:
        from sessionsched.doors.connect.door import ConnectDoor
    except ImportError as e:
        raise RuntimeError(f"connect: the Spark Connect door needs grpcio, grpcio-status, h2 and "
                           f"pyspark's Connect protos (pip install 'sessionsched[connect]'): "
                           f"{e}") from None
    door = ConnectDoor(ops, config.connect, config.server.host, config.server.tls)
    await door.start()
    return door


def front(app: App) -> Front:
    """The application's front: the agents' registrations, heartbeats and watches
    (``AgentDoor``) and Spark's protocol (``SparkDoor``) answered without FastAPI, the rest by
    the FastAPI application; a standby's answers instead of all of them but the health check
    (``Standby``); request bodies over ``auth.max_body_bytes`` refused whatever the door (an
    uploaded file: over ``uploads.max_file_bytes``)."""
    config = app.state.service.config
    files = {"/api/v1/uploads/": (config.uploads.max_file_bytes, "uploads.max_file_bytes")}
    active = app.state.active
    standby = Standby(lambda: (active.role.value, active.service.leader_url))
    return Front(app.fastapi, agent_api.AgentDoor(app.state.ops), SparkDoor(app.state.spark_rest),
                 standby, BodyLimit(config.auth.max_body_bytes, files), active.serves)


def asgi(app: App) -> Front:
    """What uvicorn serves: the application's front (calling the application does the same,
    one call later)."""
    return app.front


def referenced_uploads(service: Service, uploads: UploadStore) -> set[str]:
    """The uploads the apps in memory (live, and ended but retained) refer to."""
    texts: list[str] = []
    for sub in service.registry.snapshot().values():
        texts.extend(sub.argv)
        texts.extend((sub.conf or {}).values())
        texts.append(sub.cwd or "")
    return uploads.referenced(texts)


async def sweep_uploads(service: Service, uploads: UploadStore) -> None:
    """Every ``uploads.sweep_s``: files no app in memory refers to go (``UploadStore.sweep``)."""
    while True:
        await asyncio.sleep(service.config.uploads.sweep_s)
        if service.role in ("standby", "taking over"):
            continue  # its books are empty: the leader's apps may use the uploads
        try:
            removed = await run_in_threadpool(
                lambda: uploads.sweep(referenced_uploads(service, uploads)))
        except OSError as e:
            log.warning("could not sweep the uploads: %s", e)
            continue
        if removed:
            log.info("removed %d uploaded file(s) no app refers to", len(removed))
