"""Several clusters behind one queue tree: ``Federation.step(now, events) -> decisions``.

To the engine a second cluster is one more set of workers that an app's executors cannot
leave. So each cluster gets an engine of its own (``Scheduler``: its capacity, workers,
grants and reclaim), all on the same queue tree, and this federation keeps them one
scheduler:

- **A queued app waits in every cluster it may use.** Its submission is a copy in the queue
  of each reachable cluster its queue and it allow (``eligible``): the same priority, the same
  submission order, so each cluster sees the whole queue in the one rank order.
- **Placed once, when it leaves the queue.** Each step offers the clusters the queued apps in
  the placement rule's order (``order``: spill-over by default). The first engine that
  launches an app places it: ``Placed`` comes out before its ``LaunchDriver``, so the caller
  commits the cluster before the launch, and the app's copies in the other clusters are taken
  out (killed and forgotten) before those clusters step again. Engines step one after the
  other within a step, so two clusters cannot launch one app: it is placed exactly once.
- **One admission slice.** The engines step in the placement rule's order, and each admits
  at most what the ones before it left of the step's slice (``budget``): a step behind
  several clusters launches no more drivers than one cluster's would, so it stays as short.
- **An app's events go where it is.** Once placed, its events go to its cluster's engine
  only; while queued, a priority change goes to every copy, and what the copies decide about
  it (failing after ``max_wait``, killed) is said once, by its home copy (the first cluster it
  waits in, in the listed order).
- **A launch that started nothing.** ``LaunchUnavailable``: the app's launch failed before
  anything was started on its cluster (its backend could not be reached). It is taken off
  that cluster and queued again in the others it may use and has not been placed on since
  (``Unplaced``, said before any new placement), to be placed anew there with its next
  attempt; the caller commits the move before that launch. ``may_move`` says whether it has
  anywhere to go: if not, the caller tries the launch again where it is.
- **A lost cluster.** ``ClusterReachable(c, False)``: its engine launches nothing; queued apps
  that may use another reachable cluster leave its queue; the rest wait there, for it to come
  back. Its running apps stay on the books and are arbitrated as before (their drivers' agents
  may still report); past the cluster's ``lost_timeout_s`` they end FAILED, naming the
  cluster, and when it answers again their drivers, if they ran on, are stopped
  (``StopDriver``) before anything is launched there. While every cluster is silent the
  scheduler suspects its own network and ends nothing; the lost clocks start again when one
  answers. When the cluster is back, the queued apps that may use it wait in its queue again.

Queue order, priorities, ``max_wait``, ``max_running_apps``, ``max_cores`` and
``max_resources`` are the tree's, over every cluster (``limits``: each engine counts the apps
the others run; ``shared_caps``: their floors, executor cores and custom resources); decayed
usage is summed over every cluster (``decay``). The starting limit holds per cluster: each
engine sees only the apps placed on it; a queue's ``max_cores_per_cluster`` caps it on one
cluster (``trees``).

Events the federation adds (``clusters.events``): ``OnCluster`` for a cluster's capacity and an
app adopted where it was launched (bare, they are the first cluster's: one cluster is a
federation of one), ``ClusterReachable``, applied before the engines' events of the same batch.
A batch with an event no engine could take is refused whole, as the engine refuses one:
nothing is applied (``routing`` plans the step without changing anything).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ...model import AppSpec, AppState, Queue
from ..events import (
    Decision,
    Event,
    Forget,
    KillRequested,
    LaunchDriver,
    MarkState,
    StopDriver,
)
from ..ledger import AppRecord
from ..scheduler import Scheduler
from ..tree import QueueTree
from ..validate import EventError, check_events
from .events import Placed, Unplaced
from .limits import Counts, limited_queues
from .offers import host_used_besides, offered_later
from .order import PlacementRule, cluster_order, own_rules
from .routing import Plan, movable, plan_step
from .shared_caps import SharedCaps
from .trees import tree_for

# Five times Spark's own ``spark.network.timeout`` (120 s): a master's restart or a short
# partition passes well within it, and the apps are not ended for it.
LOST_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class ClusterSpec:
    """One cluster as the federation knows it: its ``name``, its ``weight`` (the ``weighted``
    rule), how long it may stay unreachable before its running apps end FAILED, and whether
    it runs every driver itself (``drivers_in_cluster``: Kubernetes, a driver pod for a
    client-mode app too; its copies count each driver in its room: ``routing.on_cluster``)."""

    name: str
    weight: float = 1.0
    lost_timeout_s: float = LOST_TIMEOUT_S
    drivers_in_cluster: bool = False


def allowed_by_queue(path: Sequence[Queue], names: Sequence[str]) -> list[str]:
    """The clusters a leaf's apps may use, in the listed order (``names``): those named by
    the nearest queue on the leaf's ``path`` (root first) that names any; else all."""
    for queue in reversed(path):
        if queue.clusters:
            return [name for name in names if name in queue.clusters]
    return list(names)


def eligible(spec: AppSpec, path: Sequence[Queue], names: Sequence[str]) -> list[str]:
    """The clusters ``spec`` may run on, in the listed order (``names``): those its queue may
    use that it asked for."""
    allowed = allowed_by_queue(path, names)
    return [name for name in allowed if not spec.clusters or name in spec.clusters]


class _Apps(Mapping):
    def __init__(self, fed: Federation):
        self.fed = fed

    def __getitem__(self, app_id: str) -> AppRecord:
        engine = self.fed.engine_of(app_id)
        if engine is None:
            raise KeyError(app_id)
        return engine.apps[app_id]

    def __iter__(self) -> Iterator[str]:
        fed = self.fed
        yield from fed.owner
        yield from (a for a in fed.ended_in if a not in fed.owner)
        yield from (a for a in fed.queued if a not in fed.owner and a not in fed.ended_in)

    def __len__(self) -> int:
        return sum(1 for _ in self)


@dataclass
class Queued:
    """A queued app the federation keeps: its spec (priority as it stands) and the clusters
    whose queues hold a copy, in the listed order."""

    spec: AppSpec
    copies: list[str] = field(default_factory=list)


class Federation:
    """The engines of ``clusters`` (listed order: the order of preference) on one queue tree.
    ``engine_settings``: what each cluster's ``Scheduler`` takes besides the tree (its
    capacity comes as each cluster's ``OnCluster(CapacityChanged)``)."""

    def __init__(self, root: Queue, clusters: Sequence[ClusterSpec],
                 placement: PlacementRule = PlacementRule.SPILL, **engine_settings):
        if not clusters or len({c.name for c in clusters}) != len(clusters):
            raise ValueError("clusters must be named, each name once")
        self.clusters = {c.name: c for c in clusters}
        self.names = [c.name for c in clusters]
        self.placement = PlacementRule(placement)
        self.engines = {name: Scheduler(tree_for(root, name), **engine_settings)
                        for name in self.names}
        for name, engine in self.engines.items():  # decayed usage is the tree's, summed
            engine.books.decay.beside = tuple(e.books.decay for n, e in self.engines.items()
                                              if n != name)
        self.root = root
        self._own: tuple[Queue, dict[str, PlacementRule]] | None = None  # ``_own_rules``
        self._limited = limited_queues(root)  # ``max_running_apps`` over every cluster
        self._counts = Counts(self._limited)  # each cluster's apps per limited queue
        self._caps = SharedCaps(root, self.names)  # ``max_cores``, ``max_resources``
        self.owner: dict[str, str] = {}  # placed (or adopted) app -> its cluster
        self.queued: dict[str, Queued] = {}
        self.ended_in: dict[str, str] = {}  # app that ended unplaced -> its home copy's cluster
        self.attempts: dict[str, int] = {}
        self.tried: dict[str, set[str]] = {}  # app moved off -> the clusters it left
        self.placed_count: dict[str, int] = {}
        self.reachable = dict.fromkeys(self.names, True)
        self.down_since: dict[str, float] = {}
        self.lost: set[str] = set()  # apps already ended for their lost cluster
        # Copies to take out of each cluster's queue before its engine steps again.
        self.withdraw: dict[str, list[str]] = {name: [] for name in self.names}

    # --- reading ----------------------------------------------------------------------------

    @property
    def apps(self) -> Mapping[str, AppRecord]:
        """Every app on the books, as the engine that speaks for it has it (read only)."""
        return _Apps(self)

    def cluster_of(self, app_id: str) -> str | None:
        """The cluster the app was placed on; None while it waits (or if it ended unplaced)."""
        return self.owner.get(app_id)

    def engine_of(self, app_id: str) -> Scheduler | None:
        """The engine that speaks for the app: its cluster's, or its home copy's."""
        name = self.owner.get(app_id) or self.ended_in.get(app_id)
        if name is None and app_id in self.queued:
            name = self.queued[app_id].copies[0]
        return None if name is None else self.engines[name]

    def eligible(self, spec: AppSpec) -> list[str]:
        return eligible(spec, QueueTree.of(self.root).path[spec.queue], self.names)

    def allowed_by_queue(self, leaf: str) -> list[str]:
        return allowed_by_queue(QueueTree.of(self.root).path[leaf], self.names)

    def may_move(self, app_id: str) -> bool:
        """Whether a placed app whose launch started nothing has another cluster to go to:
        one it may use, that answers, and that it has not left already."""
        where = movable(self, app_id)
        return where is not None and any(self.reachable[c] for c in where[1])

    def waits_for_lost(self, app_id: str) -> str | None:
        """Why a queued app waits when every cluster it waits in is unreachable; else None."""
        q = self.queued.get(app_id)
        if q is None or any(self.reachable[c] for c in q.copies):
            return None
        return f"cluster {', '.join(q.copies)} unreachable, and it may run on no other"

    def next_wakeup(self) -> float | None:
        times = [e.next_wakeup() for e in self.engines.values()]
        if any(self.reachable.values()):
            times += [since + self.clusters[c].lost_timeout_s
                      for c, since in self.down_since.items()]
        return min((t for t in times if t is not None), default=None)

    def check(self) -> list[str]:
        """Every engine's own check, and the federation's: a placed app on the books of its
        cluster only (copies being withdrawn aside), a queued app queued exactly where its
        copies are."""
        out = [f"{name}: {p}" for name, e in self.engines.items() for p in e.check()]
        out += self._counts.check(self.engines)
        for name, engine in self.engines.items():
            for app_id, rec in engine.apps.items():
                if app_id in self.withdraw[name]:
                    continue
                if rec.state is AppState.ACCEPTED:
                    q = self.queued.get(app_id)
                    if q is None or name not in q.copies:
                        out.append(f"{app_id} queued in {name}, which holds no copy of it")
                elif self.owner.get(app_id, self.ended_in.get(app_id)) != name:
                    out.append(f"{app_id} is {rec.state.value} in {name}, not its cluster")
        return out

    # --- the step ---------------------------------------------------------------------------

    def step(self, now: float, events: Iterable[Event] = ()) -> list[Decision]:
        plan = plan_step(self, now, list(events))
        for name, batch in plan.batches.items():  # refused whole, before anything changes
            engine = self.engines[name]
            try:
                check_events(batch, engine.apps, engine.books.leaves,
                             engine.books.occupied_leaves)
            except EventError as e:
                i = plan.origin[name][e.index]
                raise EventError(f"{e} (in cluster {name})", -1 if i is None else i,
                                 e.event) from None
        back = [n for n, up in plan.reachable.items() if up and not self.reachable[n]]
        self._commit(plan, now)
        weights = {n: c.weight for n, c in self.clusters.items()}
        order = cluster_order(self.placement, self.names, self.engines, weights,
                              self.placed_count)
        own = self._own_rules()
        orders = {rule: cluster_order(rule, self.names, self.engines, weights, self.placed_count)
                  for rule in set(own.values())}
        # The drivers of the apps ended for a lost cluster may have run on: stopped once it
        # answers, before anything is launched in the room they hold.
        out: list[Decision] = [StopDriver(app_id) for app_id in sorted(self.lost)
                               if self.owner.get(app_id) in back]
        out += [Unplaced(app_id, left, tuple(plan.copies[app_id]), why)
                for app_id, (left, why) in plan.moved.items()]
        # Each cluster's apps per limited queue change only in its own engine's step: kept
        # from one step to the next, counted again after each engine's step.
        counts = self._counts
        if self._limited and not counts.of:
            for n, e in self.engines.items():
                counts.recount(n, e)
        left = self.engines[self.names[0]].budget.admit  # the step's admission slice, shared
        for i, name in enumerate(order):
            batch = plan.batches.get(name, [])
            if self._limited:
                self.engines[name].elsewhere = counts.elsewhere(name)
            self._caps.before(name, self.engines)
            self.engines[name].host_elsewhere = host_used_besides(self.engines, name)
            self.engines[name].offered_later = offered_later(self, name, order[i + 1:], own,
                                                             orders)
            withdrawn = self.withdraw[name]  # placed or ended by a cluster before it
            for app_id in withdrawn:
                batch += [KillRequested(app_id), Forget(app_id)]
            self.withdraw[name] = []
            # Checked above, whole. A withdrawal cannot be refused: the copy is queued here
            # still (a kill of a queued app reaches every copy, so none launched one this
            # batch kills), and a queued copy killed is ended, holding nothing: forgotten.
            engine = self.engines[name]
            engine.slice_left = left
            decided = engine.step(now, batch, checked=True)
            if left is not None:
                left = max(left - sum(isinstance(d, LaunchDriver) for d in decided), 0)
            out += self._take(name, decided, plan.moved)
            if self._limited:  # its apps as they stand now, for the engines after it
                counts.recount(name, self.engines[name])
            self._caps.after(name, self.engines[name])
        return out

    def _own_rules(self) -> dict[str, PlacementRule]:
        """The leaves whose placement rule is their own, not the tree's, with it (kept for
        the tree it was read from)."""
        kept = self._own
        if kept is None or kept[0] is not self.root:
            kept = self._own = (self.root, own_rules(self.root, self.placement))
        return kept[1]

    def _commit(self, plan: Plan, now: float) -> None:
        everyone_was_down = not any(self.reachable.values())
        for name, up in plan.reachable.items():
            if up == self.reachable[name]:
                continue
            self.reachable[name] = self.engines[name].launching = up
            if up:
                self.down_since.pop(name, None)
            else:
                self.down_since[name] = now
        if everyone_was_down and any(self.reachable.values()):
            # It was our own network, most likely: the silent clusters' clocks start now.
            self.down_since = dict.fromkeys(self.down_since, now)
        for app_id, copies in plan.copies.items():
            if app_id in self.queued:
                self.queued[app_id].copies = copies
            else:
                self.queued[app_id] = Queued(plan.specs[app_id], copies)
        for app_id, spec in plan.specs.items():
            self.queued[app_id].spec = spec
        self.owner.update(plan.adopted)
        for app_id, (left, _) in plan.moved.items():
            del self.owner[app_id]
            self.tried.setdefault(app_id, set()).add(left)
        for app_id in plan.forgotten:
            for book in (self.owner, self.ended_in, self.attempts, self.tried):
                book.pop(app_id, None)
            self.lost.discard(app_id)
        self.lost.update(plan.lost)
        if plan.root is not None:
            self.root = plan.root
            self._limited = limited_queues(plan.root)
            self._counts.retree(self._limited)
            self._caps = SharedCaps(plan.root, self.names)
            for engine in self.engines.values():  # set again at its next step, if still capped
                engine.max_cores_left, engine.arbitration_caps = {}, None
        self.withdraw = {name: [] for name in self.names}  # in the plan's batches now

    def _take(self, name: str, decisions: list[Decision],
              moved: Mapping[str, tuple[str, str]]) -> list[Decision]:
        """What cluster ``name``'s engine decided, as the federation says it: a launch placed
        first, each app's word from the engine that speaks for it; not what the cluster an app
        moved off says of its leaving (killed there, where nothing was started: no stop)."""
        out: list[Decision] = []
        for d in decisions:
            app_id = d.app_id  # type: ignore[attr-defined]
            if app_id in moved and moved[app_id][0] == name and (
                    isinstance(d, StopDriver) or isinstance(d, MarkState) and d.state.terminal):
                continue
            if isinstance(d, LaunchDriver):
                out += [self._place(name, app_id), d]
            elif app_id in self.queued:
                q = self.queued[app_id]
                if q.copies[0] != name or not isinstance(d, MarkState):
                    continue  # its home copy speaks for it
                out.append(d)
                if d.state.terminal:  # it ended in its queue: its other copies go
                    del self.queued[app_id]
                    self.ended_in[app_id] = name
                    for other in q.copies[1:]:
                        self.withdraw[other].append(app_id)
            elif self.owner.get(app_id, self.ended_in.get(app_id)) == name:
                out.append(d)
        return out

    def _place(self, name: str, app_id: str) -> Placed:
        q = self.queued.pop(app_id)
        self.owner[app_id] = name
        attempt = self.attempts[app_id] = self.attempts.get(app_id, 0) + 1
        self.placed_count[name] = self.placed_count.get(name, 0) + 1
        for other in q.copies:
            if other != name:
                self.withdraw[other].append(app_id)
        return Placed(app_id, name, attempt)
