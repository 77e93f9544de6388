"""The contract between the service and a Spark cluster.

The service owns the decisions (from the engine); a backend carries them out on one kind of
cluster and reports what it observes as engine events. A backend holds no policy.

Calls come from the service's scheduling loop, one at a time (never concurrently). None of
them may block for long: ``launch`` starts a process or sends one request and returns.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from ..engine.events import Decision, Event
from ..model import Resources, Worker
from ..model.stages import Progress


class BackendError(Exception):
    """The cluster refused or could not be reached. ``str()`` says what happened, for a user."""


class BackendUnavailable(BackendError):
    """The cluster could not be reached, or answered that it cannot take the request now
    (connection refused, no answer to the connection, HTTP 503), and surely did nothing with
    it: the failure may pass by itself, so a launch that fails so is tried again with
    back-off (``carry.Retries``). A request the cluster may have acted on before its answer
    was lost (a timed-out create) is not this: trying again could run the driver twice. A
    backend that can find out (standalone: ``recognize``) adopts the driver it finds, or
    raises this once it knows none runs; one that cannot raises a plain ``BackendError``."""


@dataclass(frozen=True)
class Launch:
    """Everything needed to start one application's driver.

    ``argv`` are the user's spark-submit arguments (options then the app resource and its
    arguments), exactly as given to ``sessionsched submit``, without ``--master``. For a REST
    submission (JVM app, cluster deploy mode) ``rest_request`` is the original
    CreateSubmissionRequest body and ``argv`` is empty.

    ``conf`` are the Spark properties the service adds or overrides (dynamic allocation,
    agent settings); they win over the user's. ``env`` is added to the driver's environment.
    ``queue`` and ``priority`` (as submitted) are for backends that label what they start
    (Kubernetes); the others ignore them. ``node_sort``: the queue's node sorting
    (``fair``, ``binpacking``: docs/design/placement.md), for backends that choose a worker (memory,
    Kubernetes driver pods); a standalone master chooses its own.
    """

    app_id: str
    name: str
    argv: tuple[str, ...] = ()
    rest_request: dict | None = None
    conf: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    in_cluster: bool = False
    log_path: str | None = None
    queue: str | None = None
    priority: int | None = None
    node_sort: str = "fair"


@dataclass(frozen=True)
class Placement:
    """Where the cluster runs an app's driver, as a Spark master's REST status names it
    (``workerId``, ``workerHostPort``)."""

    worker_id: str
    worker_host_port: str


@dataclass(frozen=True)
class Handle:
    """What the service stores to find a launched driver again after a restart.

    ``kind`` "process": ``ref`` is ``"PID:START_TICKS"`` (the process and its start time, so a
    reused PID is never mistaken for it); "cluster-driver": ``ref`` is the master's driver id
    (Kubernetes: the namespace; the driver pod is found by its app-id label);
    "memory": ``ref`` is the memory cluster's driver id.
    ``started_at``: when it was launched (epoch seconds).
    """

    app_id: str
    kind: str  # "process" | "cluster-driver" | "memory"
    ref: str
    started_at: float = 0.0


RELAUNCH = "relaunch"  # ``ClusterBackend.recover``: launching again is safe


class ClusterBackend(ABC):
    # Every driver runs in the cluster, whatever its deploy mode (Kubernetes: a driver pod),
    # so the engine counts each driver's cores against the cluster, never a driver slot.
    drivers_in_cluster: ClassVar[bool] = False
    # The master URL apps are submitted to (``spark://``, ``k8s://``), for health and status.
    master: str = ""

    @abstractmethod
    def capacity(self) -> tuple[Resources, int]:
        """(cores/memory for executors and in-cluster drivers of managed apps, driver slots).

        Alive workers' totals minus what applications this scheduler does not manage use.
        Raises BackendError when the cluster cannot be read.
        """

    def workers(self) -> tuple[Worker, ...]:
        """The alive workers one by one, as the last ``capacity()`` read them (``Worker``: name,
        size, free then). ``()`` when the backend cannot tell its workers apart: the engine
        then takes the cluster as one worker of ``capacity()``."""
        return ()

    @abstractmethod
    def launch(self, launch: Launch) -> Handle:
        """Start the driver. Returns at once. Raises BackendError if it could not be started
        (including arguments it cannot use: the message names the problem), and its subclass
        BackendUnavailable when the cluster could not be asked and nothing was started."""

    @abstractmethod
    def stop(self, app_id: str) -> None:
        """Stop the driver and so its executors. Returns at once: the stop is under way
        (a process gets SIGTERM now and SIGKILL after a grace, at a later ``poll`` or at
        ``close``) and ``poll`` reports the DriverExited. No error if it has already gone or
        is unknown. BackendError if the cluster could not be asked."""

    @abstractmethod
    def adopt(self, handle: Handle) -> bool:
        """After a restart: take back a driver launched earlier (by another instance).

        True when the backend reports on it from now on: it still runs, or it ended while
        nobody watched and its exit code is known -- then the next ``poll`` reports
        DriverExited with that code. False when it is gone without a trace. BackendError
        when the cluster cannot be asked now (try again later)."""

    def recover(self, app_id: str, rest: bool, decided_at: float) -> Handle | str | None:
        """After a restart: an app whose launch was decided (at ``decided_at``) but whose
        handle never reached the store (a crash during or right after the launch). ``rest``:
        it was a Spark REST create. A Handle when this backend's own records name its driver
        (``adopt`` it); ``RELAUNCH`` when launching it again cannot run a second driver
        (nothing was started, or ``launch`` looks for what an earlier try started before it
        starts anything); None when that cannot be told (default): the app is FAILED rather
        than risk two drivers."""
        return None

    def manage(self, app_id: str, spark_app_id: str) -> None:  # noqa: B027 - optional hook
        """An application the service manages but did not ask this backend to launch (a
        notebook session's driver, known from its agent): its usage is no longer taken off
        the capacity, and ``poll`` reports its executors (not its exit). Default: nothing."""

    def steer(self, decisions: list[Decision]) -> None:  # noqa: B027 - optional hook
        """One step's ``SetTarget`` and ``Reclaim`` decisions (``carry.carry_out``). Default:
        nothing -- on a real cluster each driver's agent picks up its grant and reclaim orders
        at its next heartbeat. A backend whose drivers have no agent to ask (the memory
        cluster) makes them obey here, as the agent would. Must not raise for an app it does
        not know."""

    def placement(self, app_id: str) -> Placement | None:
        """The worker running the app's driver, if it runs in the cluster and the backend has
        seen it placed; None otherwise (default). Called from any thread: must not block."""
        return None

    @abstractmethod
    def poll(self, now: float) -> list[Event]:
        """What changed since the last poll, as engine events: DriverStarted (Spark app id
        learnt), DriverExited (with the exit code), ExecutorsChanged (the cluster's own view of
        an app's executors), CapacityChanged. Events for one app come in the order they
        happened."""

    def stage_progress(self, now: float) -> Mapping[str, Progress]:
        """Its apps' Spark stages (``model.stages``), by app id: those running now and those
        that ended since the last call. Default: none - on a real cluster each driver's agent
        reports them with its heartbeats. A backend whose drivers have no agent (the memory
        cluster) says them here, as their agents would."""
        return {}

    def close(self) -> None:  # noqa: B027 - an optional hook, a no-op unless overridden
        """Release resources held by the backend (not the drivers: they outlive the service)."""
