"""Queues as written in YAML (``queues``), and the time-of-day plans that change them
(``plans``): the queue tree the engine runs, and how a name given by a user finds its queue."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..config.plan_times import at_trigger, cron_trigger, date_time  # as the server runs plans
from ..model import WHOLE_NUMBER, Admission, NodeSort, Policy, Queue
from ..model.custom import custom_of
from .parsing import Strict, enum_value


def _reclaim_timeout(v: float) -> float:
    if v < 0 and v != -1:
        raise ValueError(f"{v} is not -1 (non-preemptive), 0 (kill now) or a positive timeout")
    return v


def _half_life(v: float) -> float:
    if not v >= 0 or v == float("inf"):
        raise ValueError(f"{v:g} is not a half-life in seconds (a positive number, 0: off)")
    return v


def _driver_fraction(v: float) -> float:
    if not 0 < v <= 1:
        raise ValueError(f"{v:g} is not a fraction of the queue's cores above 0 and at most 1")
    return v


def _amounts(v: object) -> dict[str, int]:
    """``max_resources``/``min_resources``: custom resource name -> a whole amount >= 0."""
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ValueError(f"{v!r} is not a map of resource name to amount, like {{gpu: 4}}")
    out: dict[str, int] = {}
    for name, amount in v.items():
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise ValueError(f"{name!r} is not a resource name (like gpu)")
        if name in ("cores", "cpu", "cpus", "memory", "mem"):
            raise ValueError(f"{name}: cores go in max_cores/min_share; this map holds the "
                             "custom resources (gpu, fpga, ...)")
        if isinstance(amount, bool) or not isinstance(amount, int | str):
            raise ValueError(f"{name}: {amount!r} is not a whole number")
        text = str(amount).strip()
        if not WHOLE_NUMBER.fullmatch(text):
            raise ValueError(f"{name}: {amount!r} is not a whole number")
        if int(text) < 0:
            raise ValueError(f"{name}: {amount!r} is negative")
        out[name] = int(text)
    return out


class ShareLevel(str, Enum):
    """How the Spark Connect door (``doors/connect``) gives a queue's sessions drivers, as
    Kyuubi's ``kyuubi.engine.share.level``: ``session``, a driver (an app) per session;
    ``user``, one driver per user and queue, each of its sessions a Spark Connect session of
    its own in a fair scheduler pool of its own."""

    SESSION = "session"
    USER = "user"


# Field types shared by a queue and a plan's override of it: the same words, the same errors.
AdmissionField = Annotated[Admission, BeforeValidator(lambda v: enum_value(Admission, v))]
PolicyField = Annotated[Policy, BeforeValidator(lambda v: enum_value(Policy, v))]
NodeSortField = Annotated[NodeSort, BeforeValidator(lambda v: enum_value(NodeSort, v))]
ReclaimTimeout = Annotated[float, AfterValidator(_reclaim_timeout)]
DriverFraction = Annotated[float, AfterValidator(_driver_fraction)]
HalfLife = Annotated[float, AfterValidator(_half_life)]
Amounts = Annotated[dict[str, int], BeforeValidator(_amounts)]
ShareLevelField = Annotated[ShareLevel, BeforeValidator(lambda v: enum_value(ShareLevel, v))]

# The queued apps' limits: inherited down the tree, a child's own setting winning (an
# explicit ``null`` too: it turns the parent's limit off for that child and below).
INHERITED = ("max_wait", "max_queued_apps", "max_queued_apps_per_user",
             "release_idle_sessions_after")


class QueueConfig(Strict):
    """One queue as written in YAML. Seconds are plain numbers; ``min_share``/``max_cores``
    are cores. ``max_wait`` (seconds an app may wait queued before it ends FAILED),
    ``max_queued_apps`` and ``max_queued_apps_per_user`` (submissions beyond are refused) hold
    per leaf queue; set on a parent they are inherited by every queue below that does not set
    its own (``INHERITED``)."""

    name: str
    queues: list[QueueConfig] = Field(default_factory=list)
    admission: AdmissionField = Admission.DEMAND
    starting_limit: int = Field(1, ge=1)
    starting_timeout: float = Field(300.0, gt=0)
    policy: PolicyField = Policy.FAIRSHARE
    weight: float = Field(1.0, gt=0)
    min_share: int = Field(0, ge=0)
    max_cores: int | None = Field(None, ge=1)
    # Caps and guarantees on custom resources (``{gpu: 4}``), shared by dominant share
    # (docs/operator/resources.md); empty: none.
    max_resources: Amounts = Field(default_factory=dict)
    min_resources: Amounts = Field(default_factory=dict)
    max_running_apps: int | None = Field(None, ge=1)
    reclaim_timeout: ReclaimTimeout = 0.0
    max_driver_fraction: DriverFraction = 0.4
    max_wait: float | None = Field(None, gt=0)
    max_queued_apps: int | None = Field(None, ge=1)
    max_queued_apps_per_user: int | None = Field(None, ge=1)
    # Decayed fair share: seconds; unset: the parent's (inherited down the tree), 0: off here
    # and below (unless a child sets its own). Off by default.
    usage_half_life: HalfLife | None = None
    # Node sorting (``fair``, ``binpacking``): unset, the parent's (the root's unset: fair).
    node_sort: NodeSortField | None = None
    # Who may submit into this queue (auth mode tokens): user names and groups of
    # ``auth.groups``; neither set: everyone. A parent's lists apply to a child that sets
    # neither.
    submit_users: list[str] | None = None
    submit_groups: list[str] | None = None
    # Spark Connect sessions' drivers (``ShareLevel``); unset: the parent's, root's ``session``.
    connect_share_level: ShareLevelField | None = None
    # Seconds an idle Livy or Connect session's driver on the scheduler's host is kept while
    # other apps wait for the host's room; unset: kept (inherited like ``max_wait``).
    release_idle_sessions_after: float | None = Field(None, gt=0)
    # Behind several clusters: the ones this queue's apps may run on (docs/operator/
    # clusters.md); unset: the parent's (the root's unset: every cluster).
    clusters: list[str] | None = Field(None, min_length=1)
    # ``max_cores`` on one cluster: ``{a: 40}`` (below ``max_cores``, which holds on each).
    max_cores_per_cluster: dict[str, Annotated[int, Field(ge=1)]] = Field(default_factory=dict)
    # ``max_resources`` on one cluster: ``{a: {gpu: 2}}`` (below ``max_resources``, which holds
    # over all of them together).
    max_resources_per_cluster: dict[str, Amounts] = Field(default_factory=dict)
    # Behind several clusters: how this queue's apps pick one (``spill``, ``most_free``,
    # ``weighted``: docs/operator/clusters.md); unset: the parent's (the root's: ``placement``).
    placement: Literal["spill", "most_free", "weighted"] | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v or "." in v or v != v.strip():
            raise ValueError(f"{v!r} is not a queue name (no dots, no surrounding spaces)")
        return v

    @model_validator(mode="after")
    def _unique_children(self) -> QueueConfig:
        seen: set[str] = set()
        for child in self.queues:
            if child.name in seen:
                raise ValueError(f"queue {self.name!r} has two children named {child.name!r}")
            seen.add(child.name)
        return self

    def to_queue(self, parent: str = "", inherited: dict[str, Any] | None = None) -> Queue:
        """The engine's queue; ``inherited``: the ``INHERITED`` limits and ``node_sort`` as the
        parent has them (its own, else its parent's)."""
        full = f"{parent}.{self.name}" if parent else self.name
        limits = dict(inherited or {})
        limits.update({k: getattr(self, k) for k in INHERITED if k in self.model_fields_set})
        if self.node_sort is not None:
            limits["node_sort"] = self.node_sort
        return Queue(
            name=full,
            children=tuple(c.to_queue(full, limits) for c in self.queues),
            admission=self.admission,
            starting_limit=self.starting_limit,
            starting_timeout_s=self.starting_timeout,
            policy=self.policy,
            weight=self.weight,
            min_share_cores=self.min_share,
            max_cores=self.max_cores,
            max_resources=custom_of(self.max_resources or {}),
            min_resources=custom_of(self.min_resources or {}),
            max_running_apps=self.max_running_apps,
            reclaim_timeout_s=self.reclaim_timeout,
            max_driver_fraction=self.max_driver_fraction,
            max_wait_s=limits.get("max_wait"),
            max_queued_apps=limits.get("max_queued_apps"),
            max_queued_apps_per_user=limits.get("max_queued_apps_per_user"),
            usage_half_life_s=self.usage_half_life,
            node_sort=limits.get("node_sort", NodeSort.FAIR),
            release_idle_sessions_after_s=limits.get("release_idle_sessions_after"),
            clusters=tuple(self.clusters or ()),
            cluster_max_cores=tuple(sorted(self.max_cores_per_cluster.items())),
            cluster_max_resources=tuple(sorted(  # a cap of 0 is kept: none on that cluster
                (c, tuple(sorted(a.items()))) for c, a in self.max_resources_per_cluster.items())),
            placement=self.placement,
        )


DEFAULT_QUEUES = [QueueConfig(name="root", queues=[QueueConfig(name="default")])]


def build_queue_tree(queues: list[QueueConfig]) -> Queue:
    """The root queue. A list that is not a single ``root`` is taken as root's children."""
    if len(queues) == 1 and queues[0].name == "root":
        return queues[0].to_queue()
    return QueueConfig(name="root", queues=queues).to_queue()


def resolve_queue(root: Queue, name: str) -> Queue:
    """A leaf queue by full path (``root.etl``), path without ``root.``, or unique leaf name.

    Raises LookupError naming the known leaf queues.
    """
    leaves = root.leaves()
    wanted = name.strip()
    for q in leaves:
        if wanted in (q.name, q.name.removeprefix("root.")):
            return q
    by_last = [q for q in leaves if q.name.rsplit(".", 1)[-1] == wanted]
    if len(by_last) == 1:
        return by_last[0]
    known = ", ".join(q.name for q in leaves)
    if any(q.name == wanted for q in root.walk()):
        raise LookupError(f"queue {name!r} is a parent queue; submit to a leaf queue: {known}")
    raise LookupError(f"unknown queue {name!r}; known queues: {known}")


# What a plan may set but not turn off with null: every queue has one of each.
NO_OFF = ("admission", "starting_limit", "starting_timeout", "policy", "weight", "min_share",
          "reclaim_timeout", "max_driver_fraction")


class QueueOverride(Strict):
    """Queue settings a time-of-day plan changes; unset fields keep the configured value."""

    admission: AdmissionField | None = None
    starting_limit: int | None = Field(None, ge=1)
    starting_timeout: float | None = Field(None, gt=0)
    policy: PolicyField | None = None
    weight: float | None = Field(None, gt=0)
    min_share: int | None = Field(None, ge=0)
    max_cores: int | None = Field(None, ge=1)
    max_resources: Amounts | None = None  # the whole map replaced while the plan runs
    min_resources: Amounts | None = None
    max_running_apps: int | None = Field(None, ge=1)
    reclaim_timeout: ReclaimTimeout | None = None
    max_driver_fraction: DriverFraction | None = None
    # An explicit null turns the limit off while the plan runs (inherited ones too).
    max_wait: float | None = Field(None, gt=0)
    max_queued_apps: int | None = Field(None, ge=1)
    max_queued_apps_per_user: int | None = Field(None, ge=1)
    usage_half_life: HalfLife | None = None
    release_idle_sessions_after: float | None = Field(None, gt=0)

    # A null on a setting that has no "off" would reach the engine as the setting itself
    # (a weight of None): it is refused here, where the plan is read, not when it fires.
    @field_validator(*NO_OFF, mode="before")
    @classmethod
    def _not_null(cls, v: Any, info: ValidationInfo) -> Any:
        if v is None:
            raise ValueError(f"null turns off a limit, and {info.field_name} is not one: "
                             "leave it out to keep the configured value")
        return v

    def changes(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True)


class PlanConfig(Strict):
    """A time-of-day queue plan: from each time ``cron`` fires (5-field crontab, to the minute)
    or once at ``at`` (a date and time, to the second), in ``timezone`` (default the server's
    local zone; an ``at`` with an offset keeps it), the queues run with the configured settings
    plus these ``queues`` overrides — until the next plan fires. Plans do not stack."""

    cron: str | None = None
    at: Annotated[datetime, BeforeValidator(date_time)] | None = None
    queues: dict[str, QueueOverride] = Field(default_factory=dict)
    timezone: str | None = None

    @model_validator(mode="after")
    def _when(self) -> PlanConfig:
        if (self.cron is None) == (self.at is None):
            raise ValueError("a plan fires by either `cron` (each matching minute) or `at` "
                             "(once, a date and time); give exactly one")
        try:
            if self.cron is not None:
                cron_trigger(self.cron, self.timezone)
            else:
                at_trigger(self.at, self.timezone)
        except Exception as e:  # noqa: BLE001 - APScheduler raises ValueError or zone errors
            what = f"cron {self.cron!r}" if self.cron is not None else f"at '{self.at.isoformat()}'"
            raise ValueError(f"{what}: {e}") from None
        return self


def full_names(queues: list[QueueConfig], parent: str = "") -> dict[str, QueueConfig]:
    out: dict[str, QueueConfig] = {}
    for q in queues:
        full = f"{parent}.{q.name}" if parent else q.name
        out[full] = q
        out.update(full_names(q.queues, full))
    return out


def share_level_of(queues: list[QueueConfig], leaf: str) -> ShareLevel:
    """The ``connect_share_level`` of queue ``leaf`` (a full name): its own, else its nearest
    parent's; ``session`` when none sets one."""
    names = full_names(root_configs(queues))
    name = leaf
    while name:
        q = names.get(name)
        if q is not None and q.connect_share_level is not None:
            return q.connect_share_level
        name = name.rpartition(".")[0]
    return ShareLevel.SESSION


def root_configs(queues: list[QueueConfig]) -> list[QueueConfig]:
    if len(queues) == 1 and queues[0].name == "root":
        return queues
    return [QueueConfig(name="root", queues=queues)]


def resolve_any_queue(queues: list[QueueConfig], name: str) -> str:
    """The full path of a queue at any level (``root.etl`` or ``etl``), or LookupError."""
    names = full_names(root_configs(queues))
    wanted = name.strip()
    for candidate in (wanted, f"root.{wanted}"):
        if candidate in names:
            return candidate
    raise LookupError(f"unknown queue {name!r}; known queues: {', '.join(names)}")


def apply_overrides(
    queues: list[QueueConfig], overrides: dict[str, QueueOverride]
) -> list[QueueConfig]:
    """The queue configs with each override's changes applied (names as in a plan)."""
    wanted = {resolve_any_queue(queues, k): v.changes() for k, v in overrides.items()}

    def rebuild(q: QueueConfig, parent: str) -> QueueConfig:
        # Validated, not copied (``model_copy`` checks nothing): a queue as a plan leaves it
        # is held to every rule a configured queue is.
        full = f"{parent}.{q.name}" if parent else q.name
        fields = {k: getattr(q, k) for k in q.model_fields_set}
        fields.update(wanted.get(full, {}))
        fields["queues"] = [rebuild(c, full) for c in q.queues]
        return QueueConfig.model_validate(fields)

    return [rebuild(q, "") for q in root_configs(queues)]
