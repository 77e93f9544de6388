"""A federation with the reading and stepping surface of one ``Scheduler``: what the server's
cycle, reads and restore use of the engine (``service``), so the same service drives one
cluster (a plain ``Scheduler``, as before) or several (this).

What it adds to the federation, between the service and it:

- **The cluster of events that come without one.** The service's watch reads the capacity of
  its backend as one ``CapacityChanged``; here it is replaced by each cluster's own report
  (``read_clusters``: ``OnCluster(c, CapacityChanged)``, ``ClusterReachable``). An app
  ``Adopted`` after a restart goes to the cluster the store recorded it on (``recorded``),
  never looked for elsewhere; one with no record (launched before the server ran several
  clusters) is the first cluster's, where the one cluster's apps ran.
- **Each app's attempt** (``attempt_of``): how many times it was placed, as committed. A
  restart counts them from the store (its placements' rows, ``fed.attempts``), a failed
  commit takes back the last step's (``fresh``); each launch is tagged with it
  (``service.launch``), so a driver of an older attempt can be told apart.
- **One view** of every engine (``clusters.view``).
- **Decayed usage** stays with each engine and is not written to the store (the store keeps
  one entry per queue and user: per cluster it is not built yet); ``decayed_changes`` is
  empty, so a restart starts the clusters' fair-share history afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from ...model import Queue
from ..events import Adopted, CapacityChanged, Decision, Event
from ..ledger import AppRecord
from ..validate import EventError
from ..view import EngineView
from .events import OnCluster, Placed, Unplaced
from .federation import ClusterSpec, Federation
from .order import PlacementRule
from .view import MergedView

ReadClusters = Callable[[], list[Event]]


class ServedFederation:
    """``read_clusters``: each cluster's capacity report and reachability, read now."""

    def __init__(self, root: Queue, clusters: Sequence[ClusterSpec],
                 placement: PlacementRule = PlacementRule.SPILL,
                 read_clusters: ReadClusters | None = None, **engine_settings):
        self.fed = Federation(root, clusters, placement, **engine_settings)
        self._settings = engine_settings
        self.read_clusters = read_clusters
        self.recorded: dict[str, str] = {}  # app -> the cluster the store has it launched on
        self._placed_last: list[str] = []  # the apps the last step placed (``fresh``)
        self._moved_last: dict[str, str] = {}  # app the last step moved -> the cluster it left
        self._views = MergedView()

    # --- the Scheduler's surface ------------------------------------------------------------

    @property
    def budget(self):
        return self.first.budget

    @property
    def first(self):
        return self.fed.engines[self.fed.names[0]]

    @property
    def root(self) -> Queue:
        return self.fed.root

    @property
    def apps(self) -> Mapping[str, AppRecord]:
        return self.fed.apps

    def queue(self, name: str) -> Queue:
        return self.first.queue(name)

    def view(self) -> EngineView:
        return self._views.take(self.fed)

    def check(self) -> list[str]:
        return self.fed.check()

    def next_wakeup(self) -> float | None:
        return self.fed.next_wakeup()

    def decayed_changes(self) -> list:
        return []

    def decayed(self) -> list:
        return []

    def load_decayed(self, entries: Iterable) -> None:
        """Not kept across restarts with several clusters (see the module doc)."""

    def cluster_of(self, app_id: str) -> str | None:
        """The cluster the app was placed on (or, adopted at a restart, recorded on)."""
        return self.fed.cluster_of(app_id) or self.recorded.get(app_id)

    def may_move(self, app_id: str) -> bool:
        """Whether the placed app, its launch having started nothing, may move (``Federation``)."""
        return self.fed.may_move(app_id)

    def attempt_of(self, app_id: str) -> int | None:
        """How many times the app was placed: the attempt its driver runs as (None: never)."""
        return self.fed.attempts.get(app_id)

    def fresh(self) -> ServedFederation:
        """A federation holding nothing yet, on the same clusters, that puts each app back
        on the cluster it is on now (``service.rewind``: put back by ``Adopted`` events).
        Each app's attempts are its committed placements: those of the last step, whose
        commit failed, are taken back (its apps are queued again; nothing was launched), and
        an app it moved is back on the cluster it left."""
        out = ServedFederation(self.fed.root, list(self.fed.clusters.values()),
                               self.fed.placement, self.read_clusters, **self._settings)
        out.recorded = {**self.recorded, **self.fed.owner, **self._moved_last}
        attempts = out.fed.attempts = dict(self.fed.attempts)
        for app_id in self._placed_last:
            if attempts.get(app_id, 0) > 1:
                attempts[app_id] -= 1
            else:
                attempts.pop(app_id, None)
        for name, engine in self.fed.engines.items():
            out.fed.engines[name].load_decayed(engine.decayed())
        return out

    # --- the step ---------------------------------------------------------------------------

    def step(self, now: float, events: Iterable[Event] = ()) -> list[Decision]:
        batch, origin = self._named(list(events))
        try:
            out = self.fed.step(now, batch)
        except EventError as e:
            # Named by the index the caller gave it: the cycle drops that one and steps again.
            if not 0 <= e.index < len(origin):  # one of the federation's own: a bug
                raise RuntimeError(f"the federation refused its own event: {e}") from None
            raise EventError(str(e), origin[e.index], e.event) from None
        self._placed_last = [d.app_id for d in out if isinstance(d, Placed)]
        self._moved_last = {d.app_id: d.cluster for d in out if isinstance(d, Unplaced)}
        return out

    def _named(self, events: list[Event]) -> tuple[list[Event], list[int]]:
        """The events with their cluster named, and each one's index in ``events``."""
        out: list[Event] = []
        origin: list[int] = []
        read = False
        for i, ev in enumerate(events):
            if isinstance(ev, CapacityChanged):
                if read or self.read_clusters is None:
                    continue  # the clusters were read once in this batch: enough
                read = True
                some = self.read_clusters()
            elif isinstance(ev, Adopted):
                app_id = ev.spec.app_id
                some = [OnCluster(self.recorded.get(app_id, self.fed.names[0]), ev)]
            else:
                some = [ev]
            out += some
            origin += [i] * len(some)
        return out, origin
