"""Typed request and response bodies of the native API and the agent protocol (pydantic).

Shapes are those of docs/user/api.md and docs/design/agent-protocol.md. Values that need a clear
message when wrong (priority, queue, paths) are taken loosely here and checked by the service with a
message naming the problem; everything else is checked by the types.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from sessionsched.model import EXIT_CODE_MAX, EXIT_CODE_MIN

from .cluster_schemas import ClusterHealthOut, ClusterPartOut
from .resource_schemas import (
    AppResourcesOut,
    ClusterResourceOut,
    ExecutorNoteOut,
    NullsLeftOut,
    QueueResourceOut,
)


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Taken as given and checked by ``model.parse_priority``, so that "high", 0 or true get a
# message naming the problem rather than being coerced (pydantic would take true as 1).
PRIORITY = Field(None, description="1..10000, higher first (a number or a numeric string)")


# --- native API ---------------------------------------------------------------------------


class AppIn(_In):
    argv: list[str]
    cwd: str
    queue: str | None = None
    priority: Any = PRIORITY
    name: str | None = None
    conf: dict[str, str] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    uploads: dict[str, str] | None = Field(
        None, description="a submission from another host (its cwd is not on this one): the "
        "files uploaded with PUT /api/v1/uploads/{sha256}, each reference as written in argv "
        "(the application file, an element of --py-files, --files or --jars) -> its SHA-256; "
        "the server puts the stored paths in their place. {}: nothing uploaded")


class UploadOut(BaseModel):
    sha256: str
    size: int = Field(..., description="bytes")
    new: bool = Field(..., description="stored by this request (false: it was stored already)")


class SessionIn(_In):
    name: str | None = None
    queue: str | None = None
    priority: Any = PRIORITY
    conf: dict[str, str] = Field(default_factory=dict)


class PriorityIn(_In):
    priority: Any = Field(..., description="1..10000, higher first")


class StopIn(_In):
    exit_code: int = Field(0, ge=EXIT_CODE_MIN, le=EXIT_CODE_MAX)


class ErrorOut(BaseModel):
    """Every refusal of the native API (4xx, and 503 when the store or cycle is too slow)."""

    detail: str = Field(..., description="one line naming the problem")


# What each status means (docs/user/api.md), for the OpenAPI spec of each operation.
ERROR_MEANINGS = {
    400: "a value that cannot be used (unknown queue, priority outside 1..10000, bad property, "
         "missing application file); nothing stored",
    404: "unknown app",
    409: "the app has ended (or is not a notebook session)",
    422: "a body or parameter of the wrong shape (not JSON, a missing or unknown field, a wrong "
         "type): the first problem as `field: message`; nothing stored",
    503: "the store or the scheduling cycle did not confirm in time: read the app before retrying",
    401: "auth mode tokens: no token, or an unknown or revoked one",
    403: "auth mode tokens: a rule refuses it (another user's app, a priority outside the "
         "caller's range, a queue the user may not submit to); the detail names the rule",
    413: "request body over auth.max_body_bytes",
    507: "uploads would grow past uploads.max_total_bytes",
    429: "auth mode tokens: too many submissions from this user in the last minute (see "
         "Retry-After); or the queue holds its max_queued_apps, or the user their "
         "max_queued_apps_per_user (the detail names the cap and the queue); nothing stored",
}


def error_responses(*codes: int, text: bool = False) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of an operation that can refuse with ``codes`` (``ErrorOut``).
    ``text``: the operation answers ``text/plain``, but its refusals are JSON all the same
    (FastAPI would give a ``model`` the operation's media type; ``ErrorOut``'s component is
    in the spec from the JSON operations)."""
    if text:
        json_error = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}
        return {code: {"description": ERROR_MEANINGS[code], "content": json_error}
                for code in codes}
    return {code: {"model": ErrorOut, "description": ERROR_MEANINGS[code]} for code in codes}


class CounterOfferOut(BaseModel):
    """Start sooner with fewer first executors (docs/design/estimates.md)."""

    executors: int  # minExecutors to submit with ...
    estimated_start: str  # ... to start about then (ISO 8601)
    instead_of: int  # the first executors asked now: max(minExecutors, 1)
    text: str  # e.g. "start ≈ 14:20 with 8 executors; start now with 2 (...)"


class ReservationOut(BaseModel):
    """What is set aside for a gang while it waits to be whole (docs/design/gangs.md)."""

    held_cores: int  # reserved for it so far ...
    held_memory_mib: int
    needed_cores: int  # ... of what its driver (in the cluster) and N executors need
    needed_memory_mib: int
    # The first reserved core (ISO 8601): its timeout counts from here; and when the timeout
    # runs out. Both null while nothing is reserved yet (the clock has not started).
    since: str | None
    deadline: str | None


class GangOut(BaseModel):
    """The gang the app asked for: its driver and ``executors`` executors, all or nothing."""

    executors: int
    timeout_s: float
    style: str  # hard: FAILED at the timeout; soft: goes on as a normal app
    reservation: ReservationOut | None  # while it reserves (null: not reserving)


class AppOut(NullsLeftOut):
    left_out_if_null: ClassVar[tuple[str, ...]] = ("resources", "cluster", "executor_notes",
                                                   "executor_wait_code",
                                                   "executor_wait_resource")

    id: str
    name: str
    user: str
    queue: str
    priority: int
    state: str
    position: int | None
    submitted_at: str
    started_at: str | None
    first_executor_at: str | None
    finished_at: str | None
    exit_code: int | None
    executors: int
    target: int
    demand: int
    spark_app_id: str | None
    kind: str
    reason: str
    reason_code: str | None  # while it waits: why, from a closed set (docs/user/reasons.md)
    warnings: list[str]
    # Its target placed on the workers as they free: the executors it may hold now (what its
    # agent caps dynamic allocation at; below ``target`` while room for the rest is awaited).
    grant: int = 0
    # While queued (ISO 8601; null: not estimated yet, or not within the estimate's horizon).
    estimated_start: str | None = None
    counter_offer: CounterOfferOut | None = None
    gang: GangOut | None = None  # null: not a gang
    # Behind several clusters, the cluster it was placed on (absent while queued, and with
    # one cluster: docs/operator/clusters.md).
    cluster: str | None = None
    # Its custom resources (one app's answer, GET /api/v1/apps/{id}); absent when it asks none.
    resources: AppResourcesOut | None = None
    # Why it holds fewer executors than it wants (one app's answer, while it runs; absent
    # otherwise).
    executor_notes: list[ExecutorNoteOut] | None = None
    # While it runs holding fewer executors than it wants, on every answer, lists included:
    # the first of those notes' codes by what it waits for (model/executor_notes.py), and the
    # custom resource that is short (``resource_short``); absent otherwise.
    executor_wait_code: str | None = None
    executor_wait_resource: str | None = None


class DryRunOut(NullsLeftOut):
    """``POST /api/v1/apps/dry-run``: what the submission would meet now; nothing stored."""

    left_out_if_null: ClassVar[tuple[str, ...]] = ("cluster", "clusters")

    fits: bool  # whether it could start at all on the cluster as it is
    problem: str | None  # why not, naming the number that does not fit
    queue: str
    position: int | None  # its place once queued (null: it would start at once)
    reason: str  # why it would wait ("" : it would not)
    estimated_start: str | None  # ISO 8601 (null: not within the estimate's horizon)
    counter_offer: CounterOfferOut | None
    cluster: str | None = None  # several clusters: it would start there now (null: none can)
    clusters: list[str] | None = None  # several clusters: those it may use (absent with one)


class QueueOut(NullsLeftOut):
    """A queue's settings as they are now (the plan in force applied) and its load. Settings
    that act on a leaf only are null on a parent's row: ``admission``, ``policy``,
    ``starting_limit``, ``starting_timeout``, ``reclaim_timeout`` and the queued apps' limits
    (``max_wait`` in seconds, ``max_queued_apps``, ``max_queued_apps_per_user``: each leaf's
    own or inherited from its parents; null on a leaf: no limit)."""

    name: str
    leaf: bool
    admission: str | None
    policy: str | None
    weight: float
    min_share: int
    max_cores: int | None
    max_running_apps: int | None
    starting_limit: int | None
    starting_timeout: float | None
    reclaim_timeout: float | None
    max_wait: float | None
    max_queued_apps: int | None
    max_queued_apps_per_user: int | None
    pending: int
    starting: int
    running: int
    executor_cores: int
    demand_cores: int
    # Executors' memory held and wanted, as the cores above (doors/native/queue_memory.py).
    executor_memory_mib: int = 0
    demand_memory_mib: int = 0
    waiting_reason: str | None
    waiting_reason_code: str | None
    usage_half_life: float | None = None  # as configured (None: the parent's)
    decayed_cores: float | None = None  # decayed past usage (None: the queue does not decay)
    decayed_users: dict[str, float] | None = None  # per user, in a fairshare leaf that decays
    # Each custom resource of the cluster (GPUs...): name -> used, max, min; absent on a
    # cluster without any.
    resources: dict[str, QueueResourceOut] | None = None
    node_sort: str = "fair"  # as in force (inherited): docs/design/placement.md


class EventOut(BaseModel):
    at: str
    kind: str
    detail: str


class AuditOut(BaseModel):
    at: str
    app_id: str
    kind: str  # submitted | priority | kill | expired
    who: str  # the user name
    detail: str
    actor: str | None  # as the trail says it ("User alice", "Admin root from HOST:PORT")
    sender: str | None  # from where (HOST:PORT)
    old: str | None  # the value before (priority changes)
    new: str | None  # the value after (priority changes, a submission's priority)


class UsageOut(BaseModel):
    """One app, queue, user or cluster's usage (docs/operator/usage.md defines each figure).
    The keys are ``by``'s: app (its queue, user, state; cluster behind several), queue, user
    or cluster. Each custom resource the apps held (a GPU: any name Spark knows) adds five
    figures named after it, in resource-seconds: ``{name}_held_s``, ``{name}_busy_s``,
    ``{name}_idle_s``, ``{name}_reclaimed_s``, ``{name}_driver_s`` (``gpu_held_s``...)."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"patternProperties": {
        "^.+_(held|busy|idle|reclaimed|driver)_s$": {"type": "number"}}})

    app: str | None = None
    queue: str | None = None
    user: str | None = None
    state: str | None = None
    cluster: str | None = None
    apps: int  # how many apps are added up
    held_core_s: float
    busy_core_s: float
    idle_core_s: float
    reclaimed_core_s: float
    reclaimed_executors: int
    held_gib_s: float
    driver_core_s: float
    driver_gib_s: float
    queued_s: float


class HealthOut(NullsLeftOut):
    left_out_if_null: ClassVar[tuple[str, ...]] = ("clusters",)

    status: str  # "ok" | "degraded" | "standby"
    cluster_reachable: bool | None
    cluster: str
    store: str  # "ok" | "state store unavailable: <reason>"
    master: str  # the Spark master URL: where a notebook session starts its driver's executors
    plan: str | None
    # the next time-of-day plan that will change the queues: "plan '<cron>': <changes> at <time>"
    next_plan: str | None = None
    apps: int
    last_cycle_at: str | None
    # Active/standby (server/leader.py): "single" (SQLite), "leader", "standby" or
    # "taking over"; the leader's URL once known.
    role: str = "single"
    leader: str | None = None
    # The scheduler's host as room for its client-mode drivers (engine/host_room.py): its
    # memory for them (None: not measured), what they hold, how many, driver_slots' cap.
    driver_host: dict[str, int | None] | None = None
    clusters: list[ClusterHealthOut] | None = None  # several clusters: each (absent with one)


class WorkerOut(NullsLeftOut):
    left_out_if_null: ClassVar[tuple[str, ...]] = ("resources", "free_resources")

    name: str
    cores: int  # what it offers the scheduler's apps
    memory_mib: int
    free_cores: int  # not in use at the backend's last report
    free_memory_mib: int
    # Its custom resources (name -> amount) and what of them is free; absent when it has none.
    resources: dict[str, int] | None = None
    free_resources: dict[str, int] | None = None


class ClusterOut(NullsLeftOut):
    """``GET /api/v1/cluster``: the cluster as the engine last saw it (the dashboard's view)."""

    reachable: bool | None  # None: not contacted yet
    cluster: str  # the health's one line
    cores: int  # all it offers the scheduler's apps
    memory_mib: int
    workers: list[WorkerOut]  # [] when the backend names no worker (or is out of reach)
    driver_host: dict[str, int | None]  # as in HealthOut
    spark_ui: str | None  # the standalone master's web UI (None: another backend)
    # name -> capacity, used, free for each custom resource (GPUs...); absent without any.
    resources: dict[str, ClusterResourceOut] | None = None
    # Behind several clusters, each one (docs/operator/clusters.md); absent with one.
    clusters: list[ClusterPartOut] | None = None

    left_out_if_null: ClassVar[tuple[str, ...]] = ("resources", "clusters")
