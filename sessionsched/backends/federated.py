"""Several clusters' backends as one: each decision goes to the backend of the app's cluster,
each cluster's report comes back with its name where the engine needs it (``OnCluster``).

The cluster of an app is the federation's word (``where``: ``Federation.cluster_of``), taken
from its ``Placed`` decision, which comes before its launch in the same step: so a launch
always finds its cluster, and an app no cluster was chosen for is refused, never guessed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from ..engine.clusters import ClusterReachable, OnCluster
from ..engine.events import CapacityChanged, Decision, Event
from ..model import Resources, Worker
from ..model.stages import Progress
from .base import BackendError, ClusterBackend, Handle, Launch, Placement


class FederatedBackend(ClusterBackend):
    """``backends``: cluster name -> its backend (listed order); ``where``: app id -> the
    cluster it was placed on (None: not placed)."""

    def __init__(self, backends: Mapping[str, ClusterBackend],
                 where: Callable[[str], str | None]):
        self.backends = dict(backends)
        self.where = where
        self.down: set[str] = set()  # clusters whose backend failed at the last poll or read
        # Drivers run where their cluster runs them: in it only if every cluster does so (a
        # submission is read before it is placed; each cluster's copy of it says where its
        # driver runs there: ``engine.clusters.routing.on_cluster``).
        self.drivers_in_cluster = all(b.drivers_in_cluster  # type: ignore[misc]
                                      for b in self.backends.values())
        self.master = ",".join(f"{n}={b.master}" for n, b in self.backends.items() if b.master)

    def _of(self, app_id: str) -> ClusterBackend | None:
        name = self.where(app_id)
        # A cluster no longer served (taken out of the config since): not its backend, nor any.
        return None if name is None else self.backends.get(name)

    def capacity(self) -> tuple[Resources, int]:
        """Every reachable cluster's together (for reading only: the engines take each its
        own, ``cluster_reports``); BackendError only when no cluster answers, so one cluster
        down does not make the scheduler's health "unreachable"."""
        total, slots, errors = Resources(), 0, []
        for backend in self.backends.values():
            try:
                cap, n = backend.capacity()
            except BackendError as e:
                errors.append(e)
                continue
            total, slots = total + cap, slots + (n or 0)
        if errors and len(errors) == len(self.backends):
            raise errors[0]
        return total, slots

    def workers(self) -> tuple[Worker, ...]:
        out: list[Worker] = []
        for backend in self.backends.values():
            try:
                out += backend.workers()
            except BackendError:
                continue
        return tuple(out)

    def launch(self, launch: Launch) -> Handle:
        backend = self._of(launch.app_id)
        if backend is None:
            raise BackendError(f"{launch.app_id}: placed on no cluster: not launched")
        if backend.drivers_in_cluster:  # type: ignore[misc]
            # Its driver is in the cluster there (a pod), as that cluster's engine counts it
            # (``engine.clusters.routing.on_cluster``), whatever the submission's deploy mode.
            launch = replace(launch, in_cluster=True)
        return backend.launch(launch)

    def stop(self, app_id: str) -> None:
        backend = self._of(app_id)
        if backend is not None:
            backend.stop(app_id)

    def adopt(self, handle: Handle) -> bool:
        backend = self._of(handle.app_id)
        return backend is not None and backend.adopt(handle)

    def recover(self, app_id: str, rest: bool, decided_at: float) -> Handle | str | None:
        backend = self._of(app_id)  # its recorded cluster only: never looked for elsewhere
        return None if backend is None else backend.recover(app_id, rest, decided_at)

    def manage(self, app_id: str, spark_app_id: str) -> None:
        backend = self._of(app_id)
        if backend is not None:
            backend.manage(app_id, spark_app_id)

    def steer(self, decisions: list[Decision]) -> None:
        by_cluster: dict[str, list[Decision]] = {}
        for d in decisions:
            name = self.where(d.app_id)  # type: ignore[attr-defined]
            if name in self.backends:
                by_cluster.setdefault(name, []).append(d)
        for name, some in by_cluster.items():
            self.backends[name].steer(some)

    def placement(self, app_id: str) -> Placement | None:
        backend = self._of(app_id)
        return None if backend is None else backend.placement(app_id)

    def poll(self, now: float) -> list[Event]:
        """Every cluster's news; a cluster whose backend fails is said unreachable
        (``ClusterReachable``) and the others' news comes through all the same."""
        events: list[Event] = []
        for name, backend in self.backends.items():
            try:
                polled = backend.poll(now)
            except Exception:  # noqa: BLE001 - BackendError, or a backend bug: same answer
                events += self._reached(name, False)
                continue
            events += self._reached(name, True)
            for ev in polled:
                events.append(OnCluster(name, ev) if isinstance(ev, CapacityChanged) else ev)
        return events

    def stage_progress(self, now: float) -> dict[str, Progress]:
        out: dict[str, Progress] = {}
        for backend in self.backends.values():
            try:
                out.update(backend.stage_progress(now))
            except Exception:  # noqa: BLE001, S112 - a hint for the estimates: the next look
                continue
        return out

    def cluster_reports(self) -> list[Event]:
        """Each cluster's capacity and workers, read now, as the federation takes them
        (``OnCluster``); a cluster whose backend cannot be read is said unreachable."""
        events: list[Event] = []
        for name, backend in self.backends.items():
            try:
                cap, slots = backend.capacity()
                workers = backend.workers()
            except Exception:  # noqa: BLE001
                events += self._reached(name, False)
                continue
            events += self._reached(name, True)
            events.append(OnCluster(name, CapacityChanged(cap, slots, workers)))
        return events

    def _reached(self, name: str, up: bool) -> list[Event]:
        """``ClusterReachable`` when the cluster's reachability changed, else nothing."""
        if up == (name not in self.down):
            return []
        if up:
            self.down.discard(name)
        else:
            self.down.add(name)
        return [ClusterReachable(name, up)]

    def close(self) -> None:
        for backend in self.backends.values():
            backend.close()
