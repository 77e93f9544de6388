"""The shared vocabulary: application states, queue settings, resources. Plain data, no IO.

Units are in the names: ``*_s`` seconds, ``*_mib`` mebibytes. Times are floats in seconds on
whatever clock the caller drives the engine with (wall clock in the server, simulated time in
the simulator).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from .custom import Custom, combine, covers, scaled

PRIORITY_MIN = 1
PRIORITY_MAX = 10000
PRIORITY_DEFAULT = 5000
# A driver's exit code as a process's status is kept (Kubernetes', the store's INTEGER column).
EXIT_CODE_MIN, EXIT_CODE_MAX = -(2**31), 2**31 - 1
# ASCII digits only: "²".isdigit() is true and "٣" matches \d, but int() or Spark refuse them.
WHOLE_NUMBER = re.compile(r"-?[0-9]+")
_SIZE = re.compile(r"([0-9]+)\s*([kmgtp]i?b?|b)?", re.IGNORECASE)
_MIB_PER_UNIT = {"b": 1 / 2**20, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024**2, "p": 1024**3}


class AppState(str, Enum):
    """Lifecycle of an application, the same on every backend and through every door.

    ACCEPTED --launch--> STARTING --first executor (or timeout)--> RUNNING
    RUNNING --> FINISHED | FAILED | KILLED      (any live state --kill--> KILLED)
    """

    ACCEPTED = "ACCEPTED"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    KILLED = "KILLED"

    # Plain attributes, set once per member: the engine asks them of every changed app several
    # times a cycle, where a property's call was a measurable share of the step.
    terminal: bool  # FINISHED, FAILED or KILLED
    admitted: bool  # launched and not yet ended (STARTING, RUNNING): holds a driver

    def __init__(self, value: str) -> None:
        self.terminal = value in ("FINISHED", "FAILED", "KILLED")
        self.admitted = value in ("STARTING", "RUNNING")


class Admission(str, Enum):
    """How a leaf queue lets drivers start."""

    DEMAND = "demand"  # admit into room the running apps' demand leaves; drivers capped (default)
    STATEAWARE = "stateaware"  # at most `starting_limit` apps STARTING (YuniKorn StateAware)
    RESERVE = "reserve"  # admit when the driver and max(minExecutors, 1) executors are reserved
    NONE = "none"  # stock Spark: start every driver that fits


class GangStyle(str, Enum):
    """What a gang's timeout does (YuniKorn's ``gangSchedulingStyle``)."""

    HARD = "hard"  # the app ends FAILED, its reservation released
    SOFT = "soft"  # the reservation is released and the app goes on as a normal app (default)


@dataclass(frozen=True, slots=True)
class Gang:
    """An app's gang (docs/design/gangs.md): it launches only when its driver and ``executors``
    executors of its own executor size are held for it at once; room is reserved for it as it
    frees. ``timeout_s`` counts from the first reserved core (YuniKorn's
    ``placeholderTimeoutInSeconds``, default 15 min); ``style`` says what running out does."""

    executors: int
    timeout_s: float = 900.0
    style: GangStyle = GangStyle.SOFT


class Policy(str, Enum):
    """How a leaf queue shares its executors among its running apps."""

    FIFO = "fifo"
    PRIORITY = "priority"
    FAIRSHARE = "fairshare"


class NodeSort(str, Enum):
    """Which worker a driver or an executor goes to, of those with room for it now
    (``engine.placement.sorting``; YuniKorn's node sorting policies)."""

    FAIR = "fair"  # the worker with the most free room first: load spread (default)
    BINPACKING = "binpacking"  # the fullest worker that fits first: whole workers kept free


class ReclaimMode(str, Enum):
    """How surplus executors are taken back, from the queue's ``reclaim_timeout``."""

    KILL = "kill"  # reclaim_timeout 0: kill now, running tasks are retried elsewhere
    DECOMMISSION = "decommission"  # > 0: graceful decommission now, kill at the deadline
    IDLE = "idle"  # -1: non-preemptive, only executors that go idle are released


def parse_priority(value: object) -> int:
    """A priority from user input (int or numeric string), or ValueError naming the problem."""
    if isinstance(value, bool):
        raise ValueError(f"priority must be a whole number from {PRIORITY_MIN} to {PRIORITY_MAX}")
    if isinstance(value, str):
        text = value.strip()
        if not WHOLE_NUMBER.fullmatch(text):
            raise ValueError(
                f"priority {value!r} is not a whole number from {PRIORITY_MIN} to {PRIORITY_MAX}"
            )
        value = int(text)
    if not isinstance(value, int):
        raise ValueError(f"priority must be a whole number from {PRIORITY_MIN} to {PRIORITY_MAX}")
    if not PRIORITY_MIN <= value <= PRIORITY_MAX:
        raise ValueError(f"priority {value} is outside {PRIORITY_MIN}..{PRIORITY_MAX}")
    return value


def parse_mem_mib(value: object) -> int:
    """A Spark memory size (``512m``, ``2g``, ``1gb``; a bare number is MiB, as for
    ``spark.executor.memory``) in MiB, or ValueError naming the problem."""
    if isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise ValueError(f"{value!r} is not a size like 512m or 2g")
    m = _SIZE.fullmatch(text)
    if not m:
        raise ValueError(f"{value!r} is not a size like 512m or 2g")
    mib = int(int(m.group(1)) * _MIB_PER_UNIT[(m.group(2) or "m")[0].lower()])
    if mib < 1:
        raise ValueError(f"{value!r} is less than 1 MiB")
    return mib


@dataclass(frozen=True, slots=True)
class Resources:
    """Cores, memory and the custom resources (``custom``: GPUs and any other resource name,
    as canonical (name, amount) pairs, ``model.custom``; usually empty)."""

    cores: int = 0
    mem_mib: int = 0
    custom: Custom = ()

    # The slots' own setters, not the frozen dataclass's ``object.__setattr__`` per field:
    # faster with three fields than the generated ``__init__`` was with two.
    def __init__(self, cores: int = 0, mem_mib: int = 0, custom: Custom = ()) -> None:
        _set_cores(self, cores)
        _set_mem_mib(self, mem_mib)
        _set_custom(self, custom)

    # The arithmetic fills a new instance's slots directly instead of calling the frozen
    # dataclass's ``__init__`` (one ``object.__setattr__`` per field): a third of the cost,
    # and admission does it thousands of times in a busy cycle (a burst of hundreds of apps).
    # Custom amounts are merged only when there are any: most apps and clusters have none.
    def __add__(self, other: Resources) -> Resources:
        out = _new(Resources)
        _set_cores(out, self.cores + other.cores)
        _set_mem_mib(out, self.mem_mib + other.mem_mib)
        a, b = self.custom, other.custom
        _set_custom(out, combine(a, b, 1) if a or b else ())
        return out

    def __sub__(self, other: Resources) -> Resources:
        out = _new(Resources)
        _set_cores(out, self.cores - other.cores)
        _set_mem_mib(out, self.mem_mib - other.mem_mib)
        a, b = self.custom, other.custom
        _set_custom(out, combine(a, b, -1) if a or b else ())
        return out

    def times(self, n: int) -> Resources:
        out = _new(Resources)
        _set_cores(out, self.cores * n)
        _set_mem_mib(out, self.mem_mib * n)
        a = self.custom
        _set_custom(out, scaled(a, n) if a else ())
        return out

    def fits_in(self, other: Resources) -> bool:
        return (self.cores <= other.cores and self.mem_mib <= other.mem_mib
                and (not self.custom or covers(self.custom, other.custom)))

    def fits_in_sum(self, other: Resources) -> bool:
        """Cores and memory only: for the cluster's sums (free, uncommitted), which the engine
        keeps in cores and memory; custom resources are judged per worker
        (``engine.placement``), where they are."""
        return self.cores <= other.cores and self.mem_mib <= other.mem_mib

    def __repr__(self) -> str:  # custom only when there is any: most have none
        more = f", custom={self.custom!r}" if self.custom else ""
        return f"Resources(cores={self.cores!r}, mem_mib={self.mem_mib!r}{more})"


_new = object.__new__
_set_cores = Resources.cores.__set__  # the slots' own setters: past the frozen ``__setattr__``
_set_mem_mib = Resources.mem_mib.__set__
_set_custom = Resources.custom.__set__


@dataclass(frozen=True, slots=True)
class Worker:
    """One worker (a standalone worker, a Kubernetes node, a modelled one) as its backend sees
    it: ``size``, the cores and memory it offers this scheduler's apps (a node's allocatable
    less what pods not ours request); ``free``, what is not in use at the last look. A driver
    or an executor runs on one worker: room split across workers is not room."""

    name: str
    size: Resources
    free: Resources = Resources()


@dataclass(frozen=True)
class Queue:
    """One node of the queue tree. Leaf queues hold apps; parents share among children.

    ``name`` is the full dotted path (``root.etl``). Settings that only make sense on a leaf
    (admission, policy, limits of starting apps, reclaim) are ignored on parents. The queued
    apps' limits (``max_wait_s``, ``max_queued_apps``, ``max_queued_apps_per_user``) hold per
    leaf; a parent's are what its children inherit (``config.queues``), already resolved here.
    """

    name: str
    children: tuple[Queue, ...] = ()
    admission: Admission = Admission.DEMAND
    starting_limit: int = 1
    starting_timeout_s: float = 300.0
    policy: Policy = Policy.FAIRSHARE
    weight: float = 1.0
    min_share_cores: int = 0
    max_cores: int | None = None
    # Caps and guarantees on custom resources (``max_resources: {gpu: 4}``,
    # ``min_resources: {gpu: 2}``), as canonical (name, amount) pairs (``model.custom``):
    # shared out by dominant share (``engine.arbitration.drf``). Empty: none.
    max_resources: Custom = ()
    min_resources: Custom = ()
    max_running_apps: int | None = None
    reclaim_timeout_s: float = 0.0
    # ``demand`` admission: the leaf's in-cluster drivers may hold at most this fraction of the
    # cores (and memory) it reaches by weight, more only while its apps fit there whole
    # (``admission_checks.driver_share``); YARN's maximum-am-resource-percent.
    max_driver_fraction: float = 0.4
    # The longest an app may wait queued (ACCEPTED) before it ends FAILED; None: no limit.
    max_wait_s: float | None = None
    # Most apps queued (ACCEPTED) in the leaf at once, and per user: a submission beyond is
    # refused (``intake.depth``); None: no cap.
    max_queued_apps: int | None = None
    max_queued_apps_per_user: int | None = None
    # Decayed fair share (``arbitration.decay``): the half-life in seconds of the past usage
    # that orders and divides this queue and its users beside current usage. None: the
    # parent's (the root's None: off); 0: off for this queue and those below that set none.
    usage_half_life_s: float | None = None
    # Where this queue's drivers and executors go, where sessionsched places them
    # (docs/design/placement.md); set on a parent (``root``: the whole tree), inherited.
    node_sort: NodeSort = NodeSort.FAIR
    # An interactive session's driver on the scheduler's host (Livy, Connect) idle this long -
    # no executor held, none asked for - is stopped while another app waits for the host's
    # room (``engine.host_room.idle_to_release``); None: never. Its state is lost: off unless set.
    release_idle_sessions_after_s: float | None = None
    # The clusters this queue's apps may run on (behind several clusters:
    # ``engine.clusters``); set on a parent, inherited. Empty: every one.
    clusters: tuple[str, ...] = ()
    # ``max_cores`` on one cluster (cluster, cores), below whatever ``max_cores`` says for
    # all: each cluster's engine sees its own (``engine.clusters``). Empty: none.
    cluster_max_cores: tuple[tuple[str, int], ...] = ()
    # ``max_resources`` on one cluster (cluster, its caps), as ``cluster_max_cores``.
    cluster_max_resources: tuple[tuple[str, Custom], ...] = ()
    # How this queue's apps pick among the clusters they may use (``engine.clusters.order``:
    # ``spill``, ``most_free``, ``weighted``); set on a parent, inherited. None: the tree's.
    placement: str | None = None

    @property
    def is_leaf(self) -> bool:
        return not self.children

    @property
    def reclaim_mode(self) -> ReclaimMode:
        if self.reclaim_timeout_s < 0:
            return ReclaimMode.IDLE
        return ReclaimMode.KILL if self.reclaim_timeout_s == 0 else ReclaimMode.DECOMMISSION

    def walk(self):
        """This queue and every queue below it, parents before children."""
        yield self
        for child in self.children:
            yield from child.walk()

    def leaves(self) -> list[Queue]:
        return [q for q in self.walk() if q.is_leaf]


@dataclass(frozen=True, slots=True)
class AppSpec:
    """What a submission asks for; fixed once submitted (priority aside, which lives in state).

    ``seq`` is the global submission order given by whoever stores submissions; it breaks every
    tie, so two schedulers fed the same events decide the same.
    """

    app_id: str
    queue: str
    seq: int
    submitted_at: float
    priority: int = PRIORITY_DEFAULT
    name: str = ""
    user: str = ""
    driver: Resources = Resources(1, 1024)
    driver_in_cluster: bool = False
    executor: Resources = Resources(1, 1024)
    min_executors: int = 0
    max_executors: int | None = None
    slots_max: int | None = None  # spark.ego.slots.max: cores for the app's executors
    # Launched with dynamic allocation on (``engine.agent_terms.dynamic_allocation``, decided
    # when the submission is checked: a static app is sized by its own properties).
    dynamic_allocation: bool = True
    # All or nothing: the driver and ``gang.executors`` executors at once (docs/design/gangs.md);
    # None: an app like any other.
    gang: Gang | None = None
    # A client-mode driver that runs in the user's own process (a notebook's kernel, kind
    # ``session``), not on the scheduler's host: it takes none of the host's room for drivers.
    driver_with_user: bool = False
    # spark.driver.memoryOverhead in MiB when set; None: Spark's max(384 MiB, 10 %) of the
    # driver's memory (``engine.host_room.host_need``).
    driver_overhead_mib: int | None = None
    # An interactive session (a notebook, Livy, Spark Connect): between its user's jobs its
    # driver idles, and what it holds (cached data, variables) is its user's work. On the
    # scheduler's host, its queue's ``release_idle_sessions_after_s`` may stop it then
    # (``engine.host_room.idle_to_release``); a batch app's driver is never stopped so.
    interactive: bool = False
    # The clusters it asked for (``spark.sessionsched.cluster=a,b``), behind several clusters
    # (``engine.clusters``). Empty: any its queue may use.
    clusters: tuple[str, ...] = ()
    # Most executors the app may hold: the lower of maxExecutors and spark.ego.slots.max (None:
    # no cap). Derived once here: the engine reads it for every changed app several times a
    # cycle.
    executor_cap: int | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        caps = []
        if self.max_executors is not None:
            caps.append(self.max_executors)
        if self.slots_max is not None:
            caps.append(self.slots_max // max(self.executor.cores, 1))
        object.__setattr__(self, "executor_cap", min(caps) if caps else None)

    @property
    def driver_on_host(self) -> bool:
        """Its driver runs on the scheduler's host (client mode, started by the scheduler:
        the spark-submit wrapper, Livy, Connect)."""
        return not self.driver_in_cluster and not self.driver_with_user


@dataclass(frozen=True, slots=True)
class Executor:
    """An executor as its app or the cluster reports it."""

    executor_id: str
    started_at: float = 0.0
    idle: bool = False
    profile: int = 0  # its resource profile (``model.profiles``; 0: the app's own executor)
    # The worker it runs on, where the backend tells ("": unknown): reclaim for an executor
    # that needs a GPU takes executors on the GPU workers (``engine.reclaim``).
    worker: str = ""


@dataclass
class QueueUsage:
    """Per-queue figures for status pages and metrics (a read-only view)."""

    name: str
    pending: int = 0
    starting: int = 0
    running: int = 0
    executor_cores: int = 0
    driver_cores: int = 0
    demand_cores: int = 0
    apps: list[str] = field(default_factory=list)
    # Decayed fair share (a queue with ``usage_half_life``): its decayed usage in cores at the
    # last step, and in a fairshare leaf that decays, each user's; None: it does not decay.
    decayed_cores: float | None = None
    decayed_users: dict[str, float] | None = None
