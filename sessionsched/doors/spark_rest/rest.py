"""Spark's REST submission protocol, as a Spark 4.0.1 standalone master's
StandaloneRestServer speaks it, so unmodified ``spark-submit --master spark://HOST:PORT
--deploy-mode cluster --conf spark.master.rest.enabled=true`` (and ``--status``/``--kill``)
talks to the scheduler; plus Conductor's ``update`` for priorities.

Plain Starlette routes rather than FastAPI operations: the protocol's error shapes
(``ErrorResponse``, 468 for a wrong version, ``success:false`` with HTTP 200 for an unknown id)
are Spark's, not FastAPI's, and the status read is the hot path of ``spark-submit``'s polling.

Every answer is laid out byte for byte as the master writes it (``jackson``: one
``"key" : value`` per line, keys in alphabetical order): clients such as Airflow's Spark
provider read it line by line. A status answer carries the master's ``workerId`` and
``workerHostPort`` once the backend has seen the driver placed on a worker (cluster drivers).

What differs from a master, on purpose:
- ``driverState`` maps our states (ACCEPTED -> SUBMITTED, STARTING/RUNNING -> RUNNING, ended as
  named) and status answers also carry ``schedulerState``, ``queue``, ``priority``,
  ``position`` (while queued), ``schedulerReason`` (why it waits or how it ended) and, behind
  several clusters, the ``cluster`` it was placed on (Spark 4.0.1's ``SubmitRestProtocolMessage
  .fromJson`` drops fields it does not know); a FAILED driver's reason is also its
  ``message``, which spark-submit prints as the error;
- error messages name the problem in one line instead of a Java stack trace;
- a create's warnings (e.g. a ``spark.ego.app.schedule.policy`` the queue overrides) are
  appended to its ``message``;
- with ``auth.mode: tokens`` (the operations port's gate): a create authenticates with ``--conf
  spark.sessionsched.token=TOKEN`` (unmodified spark-submit sends no header; the property is
  removed before anything is stored or launched) or ``Authorization: Bearer``; kill and update
  with the header only (``spark-submit --kill`` sends neither, so it is anonymous: refused, or
  the ``auth.anonymous`` user's own apps only). Status and readyz need no token: spark-submit
  polls the status of what it created without one, and every user may see every app. A
  refusal is an ``ErrorResponse``, 401 or 403, naming what to add or the rule.

Every operation goes through the operations port (``operations.port.Operations``: who, may
they, the checks, the service, the wait); this module translates Spark's messages and the
port's outcomes into Spark's answers.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, Router

from sessionsched.doors.common.asgi import send_answer
from sessionsched.doors.common.bodies import json_body
from sessionsched.doors.common.requests import sender
from sessionsched.doors.common.spark import SPARK_VERSION
from sessionsched.doors.common.times import estimate_fields
from sessionsched.doors.spark_rest import jackson
from sessionsched.model import AppState, parse_priority
from sessionsched.model.text import one_line
from sessionsched.operations import auth
from sessionsched.operations.callers import bearer, strip_token
from sessionsched.operations.outcomes import Kind, Outcome
from sessionsched.operations.port import CYCLE_WAIT_S, Operations

JSON_TYPE = "application/json;charset=utf-8"
ACTIONS = ("create", "kill", "status", "readyz", "update")
_ACTION_METHODS = {"create": "POST", "kill": "POST", "status": "GET", "readyz": "GET",
                   "update": "POST"}
_ANY = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]
_SUBMIT_THROUGH = "Please submit requests through http://[host]:[port]/v1/submissions/..."
STATUS_CACHE_MAX = 20_000  # cached status answers; past it the cache starts over (bounded memory)

# Spark REST driverState for each of our states (``model.AppState``).
DRIVER_STATE = {
    AppState.ACCEPTED: "SUBMITTED",
    AppState.STARTING: "RUNNING",
    AppState.RUNNING: "RUNNING",
    AppState.FINISHED: "FINISHED",
    AppState.FAILED: "FAILED",
    AppState.KILLED: "KILLED",
}
# A refusal's HTTP status (an ErrorResponse); the other outcomes are answered per action.
STATUS = {Kind.UNAUTHORIZED: 401, Kind.FORBIDDEN: 403, Kind.INVALID: 400, Kind.REFUSED: 400,
          Kind.OVERLOADED: 503, Kind.UNAVAILABLE: 503}




def reply(body: dict[str, Any], status: int = 200) -> Response:
    return Response(jackson.dumps(body), status_code=status, headers={"content-type": JSON_TYPE})


def error(message: str, status: int = 400, **extra: Any) -> Response:
    return reply({"action": "ErrorResponse", "message": one_line(message), **extra,
                  "serverSparkVersion": SPARK_VERSION}, status)


def refused(out: Outcome) -> Response:
    """A refusal of the port (401, 403, a limit's own status: 429 for a queue's depth caps) as
    an ``ErrorResponse`` with ``success: false``: nothing was done."""
    return error(out.message, out.status or STATUS[out.kind], success=False)


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        raise ValueError("empty request body")
    try:
        return json_body(raw)
    except ValueError as e:
        raise ValueError(f"not JSON: {e}") from None


class SparkRest:
    def __init__(self, ops: Operations):
        self.ops = ops
        self._status_cache: dict[str, tuple[int, Any, bytes]] = {}

    def _caller(self, request: Request, token: str | None = None) -> Outcome:
        """Who is asking: the Authorization header, else ``token`` (a create's property)."""
        if not self.ops.auth_on:
            return self.ops.identify(None)
        try:
            header = bearer(request.headers.get("authorization"))
        except auth.Unauthorized as e:
            return Outcome(Kind.UNAUTHORIZED, message=str(e))
        out = self.ops.identify(header or token)
        if out.kind is Kind.UNAUTHORIZED and not (header or token):
            return Outcome(Kind.UNAUTHORIZED, message=f"{out.message}; spark-submit: add --conf "
                                                      f"spark.sessionsched.token=TOKEN")
        return out

    def routes(self) -> list[Route]:
        # The status read comes first: spark-submit polls it.
        return [
            Route("/v1/submissions/status/{sid}", self.status, methods=["GET"]),
            Route("/v1/submissions/create", self.create, methods=["POST"]),
            Route("/v1/submissions/kill/{sid}", self.kill, methods=["POST"]),
            Route("/v1/submissions/update/{sid}", self.update, methods=["POST"]),
            Route("/v1/submissions/readyz", self.readyz, methods=["GET"]),
            Route("/{version}/submissions", self.other, methods=_ANY),
            Route("/{version}/submissions/{rest:path}", self.other, methods=_ANY),
        ]

    async def create(self, request: Request) -> Response:
        try:
            body = await _json_body(request)
        except ValueError as e:
            return error(f"Malformed request: {e}")
        token = None
        if isinstance(body, dict) and isinstance(body.get("sparkProperties"), dict):
            props, token = strip_token(body["sparkProperties"])
            body = {**body, "sparkProperties": props}  # the token is never kept
        caller = self._caller(request, token)
        if not caller.ok:
            return refused(caller)
        out = await self.ops.submit_rest(caller.value, sender(request), body)
        if out.kind is Kind.INVALID:
            return error(f"Malformed request: {out.message}")
        if out.kind in (Kind.OVERLOADED, Kind.UNAVAILABLE, Kind.NOT_FOUND, Kind.CONFLICT):
            return error(f"Submission not stored: {out.message}", 503)
        if not out.ok:  # a create refused (never fits, a limit): as Spark's failed create
            return error(out.message, out.status or STATUS[out.kind], success=False)
        stored, unknown = out.value
        message = f"Driver successfully submitted as {stored.id}"
        if warnings := stored.submission.warnings:
            message += ". Warning: " + "; ".join(warnings)
        answer = {"action": "CreateSubmissionResponse", "message": message,
                  "serverSparkVersion": SPARK_VERSION, "submissionId": stored.id,
                  "success": True}
        if unknown:
            answer["unknownFields"] = unknown
        return reply(answer)

    async def status(self, request: Request) -> Response:
        return Response(self.status_bytes(request.path_params["sid"]),
                        headers={"content-type": JSON_TYPE})

    def status_bytes(self, sid: str) -> bytes:
        """The status answer as sent. Cached per driver until the service's books change
        (``Service.version``) or the driver is placed on a worker: spark-submit and scripts
        poll the same ids over and over. Only the event loop's thread calls this, so the cache
        needs no lock."""
        hit = self._status_cache.get(sid)
        version = self.ops.version  # read first: a change while we build makes it stale
        placement = self.ops.placement(sid)
        if hit is not None and hit[0] == version and hit[1] == placement:
            return hit[2]
        body = self.status_body(sid, placement)
        data = jackson.dumps(body)
        if body["success"]:  # unknown ids are not kept: anyone can make them up
            if len(self._status_cache) >= STATUS_CACHE_MAX:
                self._status_cache.clear()  # rare; apps polled again are cached again at once
            self._status_cache[sid] = (version, placement, data)
        return data

    def status_body(self, sid: str, placement: Any = None) -> dict[str, Any]:
        """The master's fields (``workerId``/``workerHostPort`` once the driver is placed on a
        worker), then ours."""
        app = self.ops.app(sid)
        if app is None:
            return {"action": "SubmissionStatusResponse",
                    "message": f"Submission {sid} does not exist",
                    "serverSparkVersion": SPARK_VERSION, "submissionId": sid, "success": False}
        out = {"action": "SubmissionStatusResponse", "driverState": DRIVER_STATE[app.state],
               "serverSparkVersion": SPARK_VERSION, "submissionId": sid, "success": True,
               "schedulerState": app.state.value, "queue": app.queue, "priority": app.priority}
        if app.state is AppState.ACCEPTED:
            out["position"] = app.position
            out.update(estimate_fields(app))
        if app.reason:
            out["schedulerReason"] = app.reason
        if app.reason_code is not None:
            out["schedulerReasonCode"] = str(app.reason_code)
        if app.cluster is not None:  # behind several clusters, once placed
            out["cluster"] = app.cluster
        if placement is not None:
            out["workerId"] = placement.worker_id
            out["workerHostPort"] = placement.worker_host_port
        if app.state is AppState.FAILED:
            # spark-submit logs a status ``message`` as the driver's error: only for failures.
            out["message"] = app.reason
        return out

    async def kill(self, request: Request) -> Response:
        sid = request.path_params["sid"]
        gone = {"action": "KillSubmissionResponse",
                "message": f"Driver {sid} has already finished or does not exist",
                "serverSparkVersion": SPARK_VERSION, "submissionId": sid, "success": False}
        caller = self._caller(request)
        if not caller.ok:
            return refused(caller)
        actor = f"{caller.value.actor} (Spark REST from {sender(request)})"
        out = await self.ops.kill(caller.value, sid, actor=actor)
        if out.kind is Kind.OVERLOADED:
            return reply({**gone, "message": f"Kill request for {sid} is queued; the scheduler "
                                             f"did not confirm it within {CYCLE_WAIT_S:g}s"})
        if out.kind is Kind.UNAVAILABLE:  # not applied: the kill can be asked again
            return error(out.message, 503)
        if out.kind in (Kind.UNAUTHORIZED, Kind.FORBIDDEN):
            return refused(out)
        if not out.ok or out.value.state is not AppState.KILLED:
            return reply(gone)
        return reply({**gone, "message": f"Kill request for {sid} submitted", "success": True})

    async def update(self, request: Request) -> Response:
        sid = request.path_params["sid"]
        try:
            body = await _json_body(request)
            if not isinstance(body, dict):
                raise ValueError("expected a JSON object")
            if body.get("action") != "UpdateSubmissionRequest":
                raise ValueError(f"Validation of message {body.get('action')} failed! expected "
                                 "action UpdateSubmissionRequest")
            if "priority" not in body:
                raise ValueError("priority is missing")
            priority = parse_priority(body["priority"])
        except ValueError as e:
            return error(f"Malformed request: {e}")
        caller = self._caller(request)
        if not caller.ok:
            return refused(caller)
        out = {"action": "UpdateSubmissionResponse", "serverSparkVersion": SPARK_VERSION,
               "submissionId": sid}
        unknown = [k for k in body if k not in ("action", "clientSparkVersion", "priority")]
        if unknown:
            out["unknownFields"] = unknown
        resolved = self.ops.resolve(sid)
        if resolved is None:
            return reply({**out, "message": f"Submission {sid} does not exist", "success": False})
        app_id, is_spark_app = resolved
        changed = await self.ops.set_priority(
            caller.value, app_id, priority, sender(request),
            via=f"Spark REST update from {sender(request)}")
        if changed.kind in (Kind.FORBIDDEN, Kind.UNAVAILABLE):
            return refused(changed)
        if changed.kind in (Kind.NOT_FOUND, Kind.CONFLICT):
            return reply({**out, "message": changed.message, "success": False})
        # done, or overloaded: committed, and the engine applies it at its next cycle
        what = "application" if is_spark_app else "driver"
        return reply({**out, "message": f"Update request for {what} {sid} submitted.",
                      "success": True})

    async def readyz(self, request: Request) -> Response:
        return reply({"action": "ReadyzResponse", "message": self.ops.cluster_health(),
                      "serverSparkVersion": SPARK_VERSION, "success": True})

    async def other(self, request: Request) -> Response:
        version = request.path_params["version"]
        if version != "v1":
            return error(f"Unknown protocol version '{version}'. {_SUBMIT_THROUGH}", 468,
                         highestProtocolVersion="v1")
        action = request.path_params.get("rest", "").split("/", 1)[0]
        if action in _ACTION_METHODS and request.method != _ACTION_METHODS[action]:
            return error(f"HTTP method {request.method} is not supported by this URL", 405)
        if action in ("kill", "status", "update"):
            return error(f"Submission ID is missing in {action} request.")
        return error("Missing an action: please specify one of /create, /kill, /status, "
                     f"/update or /readyz. {_SUBMIT_THROUGH}")


def is_spark(path: str) -> bool:
    """Whether a path is Spark's protocol, ``/VERSION/submissions[/...]`` (any version: a wrong
    one is answered 468 by ``SparkRest.other``): the server's front sends it to ``SparkDoor``."""
    parts = path.split("/", 3)
    return len(parts) >= 3 and parts[2] == "submissions"


class SparkDoor:
    """ASGI: Spark's protocol, as the server's front (``server/front.py``) hands it over: the
    status read answered at once, the rest by its own light Starlette router (a path it does
    not route: Starlette's plain 404 or 405).

    spark-submit's creates and status polls, ``--status`` and scripts hammering a status make
    the busiest paths; answered here they skip FastAPI's per-request machinery (error and
    telemetry middleware, its router): about 1.5-2x the requests per second
    (``benchmarks/service_throughput.py``).
    """

    STATUS = "/v1/submissions/status/"

    def __init__(self, spark_rest: SparkRest):
        self.spark_rest = spark_rest
        self.router = Router(routes=spark_rest.routes())

    async def __call__(self, scope, receive, send):
        path = scope["path"]
        if scope["method"] == "GET" and path.startswith(self.STATUS):
            sid = path[len(self.STATUS):]
            if sid and "/" not in sid:
                await send_answer(send, 200, self.spark_rest.status_bytes(sid), JSON_TYPE)
                return
        await self.router(scope, receive, send)
