"""Events the engine takes in and decisions it gives out.

Whoever drives the engine (the server, the simulator, a test) turns what it observed into
events, calls ``Scheduler.step(now, events)``, and carries out the decisions. Both sides are
frozen dataclasses so a decision list can be compared, logged and replayed.

A batch is checked before any of it is applied (``validate``): an event the engine cannot take
(an unknown app or queue, a priority outside 1..10000, executors of an app never launched...)
refuses the whole batch with one ``EventError`` line and changes nothing. Late facts are not
errors: a kill of an app that already ended does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..model import AppSpec, AppState, Executor, Queue, ReclaimMode, Resources, Worker
from ..model.profiles import Profiles

# --- events -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Submitted:
    spec: AppSpec


@dataclass(frozen=True)
class Adopted:
    """An app launched before the scheduler restarted: back on the books, not relaunched.
    ``reason``: why it is in its state, as last recorded (kept until its next change)."""

    spec: AppSpec
    state: AppState
    priority: int
    launched_at: float
    first_executor_at: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class PriorityChanged:
    app_id: str
    priority: int


@dataclass(frozen=True)
class KillRequested:
    app_id: str


@dataclass(frozen=True)
class DriverStarted:
    """The driver process is up (the Spark application id may be known by now)."""

    app_id: str
    spark_app_id: str | None = None


@dataclass(frozen=True)
class DriverExited:
    """The driver is gone with this exit code. ``reason``: why, when the code alone would not
    say (a launch that failed, a notebook gone silent); it becomes the app's reason."""

    app_id: str
    exit_code: int
    reason: str | None = None


class Witness(str, Enum):
    """Who reported an executor list: whether it says what the app wants (``agent_terms``)."""

    AGENT = "agent"  # the app's driver agent, or a backend that reports as one (memory)
    CLUSTER = "cluster"  # the cluster manager's view (beside an agent speaking for the app)
    CLUSTER_ALONE = "cluster alone"  # the cluster manager's view, no live agent speaking


@dataclass(frozen=True)
class ExecutorsChanged:
    """The complete list of the app's live executors, as its agent or the cluster sees it.
    ``seen_by``: who saw it (``Witness``); the cluster's view with no agent speaking for the
    app also sets what it is taken to want (``agent_terms``).

    When the list was seen (the usage meter's business, not the engine's), from an agent that
    says so (docs/design/agent-protocol.md): ``observed_at``, the agent's look at Spark that read it
    (epoch seconds, the agent's clock); ``removed``, (executor id, when its driver removed
    it) for executors gone since the agent's last report, as far as Spark's records tell;
    ``changed_after``, the agent's look before, that still saw the list as it was. None and
    (): not said (an older agent, the cluster's view): the list counts from when the
    scheduler took it."""

    app_id: str
    executors: tuple[Executor, ...]
    seen_by: Witness = Witness.CLUSTER
    observed_at: float | None = None
    removed: tuple[tuple[str, float], ...] = ()
    changed_after: float | None = None


@dataclass(frozen=True)
class DemandChanged:
    """How many executors the app could use now (Spark's maxNumExecutorsNeeded), over all its
    resource profiles; ``profiles``: each one's shape and demand (``model.profiles``), empty
    when its agent reported the default profile alone (or an older agent)."""

    app_id: str
    demand: int
    profiles: Profiles = ()


@dataclass(frozen=True)
class CapacityChanged:
    """Cluster resources for this scheduler: alive workers minus apps it does not manage.

    ``workers``: the alive workers one by one (``model.Worker``); the engine decides fit per
    worker on them (``placement``). ``capacity`` is their sum less what apps the scheduler
    does not manage hold (derived: ``of_workers``). No workers (``()``): the cluster is taken
    as one worker of ``capacity`` (a backend that cannot tell its workers apart).
    ``driver_slots`` and ``host_room`` (the scheduler host's memory for drivers on it,
    ``host_room``): None leaves them as they are."""

    capacity: Resources
    driver_slots: int | None = None
    workers: tuple[Worker, ...] = ()
    host_room: Resources | None = None

    @classmethod
    def of_workers(cls, workers: tuple[Worker, ...], driver_slots: int | None = None,
                   others: Resources | None = None) -> CapacityChanged:
        """The event for ``workers``, its capacity their sum less ``others`` (what apps not
        managed hold)."""
        total = Resources()
        for w in workers:
            total = total + w.size
        return cls(total - (others or Resources()), driver_slots, tuple(workers))


@dataclass(frozen=True)
class QueuesChanged:
    """A new queue tree (config reload or a time-of-day plan), in force from this step.

    Every leaf that holds apps (queued, running, or ended but still holding executors) must
    stay a leaf: a tree that drops one is refused (``EventError``), and the old tree stays.
    Outstanding reservations stay until met even if their queue no longer admits by ``reserve``.
    """

    root: Queue


@dataclass(frozen=True)
class Forget:
    """Drop an ended app from the books: a long-running server keeps only so many ended apps
    in memory (its store keeps them all). Only an app that has ended and holds no executor on
    the books may be forgotten; after it, the id is unknown to the engine."""

    app_id: str


@dataclass(frozen=True)
class Tick:
    """Only time has passed."""


Event = (
    Submitted
    | Adopted
    | PriorityChanged
    | KillRequested
    | DriverStarted
    | DriverExited
    | ExecutorsChanged
    | DemandChanged
    | CapacityChanged
    | QueuesChanged
    | Forget
    | Tick
)

# --- decisions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class LaunchTerms:
    """What the driver is launched with (``agent_terms``): ``dynamic_allocation`` on or off;
    ``executor_ceiling``: the most executors the cluster holds, the agent's ceiling (None:
    none handed); ``gang_executors``: a gang's N, launched with minExecutors and
    initialExecutors N so Spark asks for all of them at once and keeps them (None: no gang)."""

    dynamic_allocation: bool = True
    executor_ceiling: int | None = None
    gang_executors: int | None = None


@dataclass(frozen=True)
class LaunchDriver:
    """Start the app's driver, on ``terms`` (``agent_terms``; like ``MarkState``'s facts,
    they do not take part in comparing decisions)."""

    app_id: str
    terms: LaunchTerms = field(default=LaunchTerms(), compare=False)


@dataclass(frozen=True)
class StopDriver:
    """Kill an admitted app's driver (and with it its executors)."""

    app_id: str


@dataclass(frozen=True)
class SetTarget:
    """``target``: the executors the app deserves by its queue's policy.

    ``grant``: how many it may hold right now. It is below ``target`` while the executors it is
    owed are still held by others being reclaimed; that is what keeps the cluster from being
    overcommitted. The agent caps dynamic allocation at ``grant``.
    """

    app_id: str
    target: int
    grant: int
    # ``grant`` split over the app's resource profiles, (profile id, executors) by id
    # (``placement.profiles``); empty for an app with the default profile alone.
    grants: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class Reclaim:
    """Take these executors back from the app.

    KILL: now. DECOMMISSION: gracefully now, kill any still there at ``deadline``.
    IDLE: these executors are idle now; release them.
    """

    app_id: str
    executor_ids: tuple[str, ...]
    mode: ReclaimMode
    deadline: float | None = None


@dataclass(frozen=True)
class MarkState:
    """The app is now in ``state``, for ``reason``. It carries the facts that go with the
    change, for whoever records it (they do not take part in comparing decisions): ``at``, when
    (STARTING: the launch; terminal: the end); ``first_executor_at`` on RUNNING (None when the
    starting timeout moved it on); ``exit_code`` on a terminal state (None: killed before its
    driver reported one); ``expired``: FAILED for waiting its queue's ``max_wait`` (the audit
    trail records it)."""

    app_id: str
    state: AppState
    reason: str
    at: float = field(default=0.0, compare=False)
    first_executor_at: float | None = field(default=None, compare=False)
    exit_code: int | None = field(default=None, compare=False)
    expired: bool = field(default=False, compare=False)


Decision = LaunchDriver | StopDriver | SetTarget | Reclaim | MarkState
