"""What the store keeps about an application, as plain data.

``StoredApp`` is one row of the ``apps`` table: the app's ``Submission`` (its spec, and what
launches it: the spark-submit arguments or the Spark REST request, its conf, environment and
working directory) plus the state that changes (state, priority, times, ``handle``: how to
find its driver again after a restart). The store writes and reads them; the service keeps
none as its books: a restart reads the rows back (``service.restore``) into the registry (the
submissions) and the engine (the scheduling state), and an ended app's row is turned into a
read view (``service.reads.AppRead.stored``). ``EventRecord`` is one line of an app's event
trail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from ..engine.agent_terms import dynamic_allocation
from ..model import AppSpec, AppState, Gang, GangStyle, Resources
from ..model.custom import custom_of
from ..model.submission import AppKind, IdentityFromSpec, Submission


class UsageRow(NamedTuple):
    """An app's usage as the store has it (``Store.usage_rows``)."""

    id: str
    queue: str
    user: str
    state: str
    submitted_at: float
    started_at: float | None
    finished_at: float | None
    usage: dict[str, Any] | None
    cluster: str | None = None  # behind several clusters, the one it was placed on


@dataclass
class StoredApp(IdentityFromSpec):
    """A row of ``apps``: the submission (the identity is its spec's, read through it) and
    the app's durable state. The spec's priority is the row's: the one to restore."""

    submission: Submission
    state: AppState = AppState.ACCEPTED
    reason: str = ""
    started_at: float | None = None
    first_executor_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    spark_app_id: str | None = None
    handle: dict[str, Any] | None = None
    log_path: str | None = None
    # A STARTING app whose launch failed for a transient reason and waits to be tried again
    # (nothing was started): {"tries": failed so far, "at": epoch s of the next try}.
    launch_wait: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None  # ``sessionsched.model.usage.AppUsage.to_json``
    cluster: str | None = None  # the cluster it was placed on, behind several (else None)

    @property
    def spec(self) -> AppSpec:  # type: ignore[override]
        return self.submission.spec

    @property
    def kind(self) -> str:
        return self.submission.kind

    @property
    def priority(self) -> int:
        return self.submission.spec.priority


@dataclass(frozen=True)
class EventRecord:
    """One line of an app's audit trail."""

    app_id: str
    at: float
    kind: str  # submitted | state | priority | kill | launch | adopted | warning | agent | exit
    detail: str
    actor: str | None = None  # the audit's facts (submitted, priority, kill), as columns
    sender: str | None = None
    old: str | None = None
    new: str | None = None


# The AppSpec's sizing fields, stored as one JSON object (the rest are columns of their own).


def spec_to_json(spec: AppSpec) -> dict[str, Any]:
    return {
        "driver": _size_to_json(spec.driver),
        "driver_in_cluster": spec.driver_in_cluster,
        "executor": _size_to_json(spec.executor),
        "min_executors": spec.min_executors,
        "max_executors": spec.max_executors,
        "slots_max": spec.slots_max,
        "dynamic_allocation": spec.dynamic_allocation,
        "gang": None if spec.gang is None else {
            "executors": spec.gang.executors, "timeout_s": spec.gang.timeout_s,
            "style": spec.gang.style.value},
        "driver_with_user": spec.driver_with_user,
        "driver_overhead_mib": spec.driver_overhead_mib,
        "interactive": spec.interactive,
        # Only when it asked for some: the rows of the rest are as they were.
        **({"clusters": list(spec.clusters)} if spec.clusters else {}),
    }


def spec_from_json(
    data: dict[str, Any], *, app_id: str, queue: str, seq: int, submitted_at: float,
    priority: int, name: str, user: str, unrecorded_dynamic: bool = True,
    unrecorded_with_user: bool = False, unrecorded_interactive: bool = False,
) -> AppSpec:
    """``unrecorded_dynamic``: dynamic allocation for a row written before it was recorded
    (``dynamic_before_recorded``); ``unrecorded_with_user``, ``unrecorded_interactive``:
    where the driver runs and whether the app is a session, for a row written before they
    were recorded (both from its kind). Such a row's driver overhead is Spark's default."""
    return AppSpec(
        app_id=app_id,
        queue=queue,
        seq=seq,
        submitted_at=submitted_at,
        priority=priority,
        name=name,
        user=user,
        driver=_size_from_json(data["driver"]),
        driver_in_cluster=bool(data["driver_in_cluster"]),
        executor=_size_from_json(data["executor"]),
        min_executors=int(data["min_executors"]),
        max_executors=data["max_executors"],
        slots_max=data["slots_max"],
        dynamic_allocation=bool(data.get("dynamic_allocation", unrecorded_dynamic)),
        gang=_gang(data.get("gang")),
        driver_with_user=bool(data.get("driver_with_user", unrecorded_with_user)),
        driver_overhead_mib=data.get("driver_overhead_mib"),
        interactive=bool(data.get("interactive", unrecorded_interactive)),
        clusters=tuple(data.get("clusters", ())),
    )


def _size_to_json(r: Resources) -> dict[str, Any]:
    """Cores and memory; ``custom`` (name -> amount) only when there is any, so the rows of
    apps without custom resources are as they were."""
    out: dict[str, Any] = {"cores": r.cores, "mem_mib": r.mem_mib}
    if r.custom:
        out["custom"] = dict(r.custom)
    return out


def _size_from_json(data: dict[str, Any]) -> Resources:
    return Resources(int(data["cores"]), int(data["mem_mib"]),
                     custom_of(data.get("custom") or {}))


def _gang(data: dict[str, Any] | None) -> Gang | None:
    if not data:
        return None
    return Gang(executors=int(data["executors"]), timeout_s=float(data["timeout_s"]),
                style=GangStyle(data["style"]))


def dynamic_before_recorded(kind: str, conf: dict[str, str], argv: list[str]) -> bool:
    """Dynamic allocation for a row written before the spec recorded it: the engine's rule
    (``agent_terms.dynamic_allocation``) on what the row keeps of the user's properties --
    its ``conf``, then ``--conf`` in its spark-submit arguments, which wins."""
    key = "spark.dynamicAllocation.enabled"
    props = dict(conf)
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag == "--conf" and value.startswith(f"{key}="):
            props[key] = value.split("=", 1)[1]
    asked = props.get(key)
    return dynamic_allocation(None if asked is None else asked.strip().lower() == "true",
                              via_spark_rest=kind == AppKind.REST)
