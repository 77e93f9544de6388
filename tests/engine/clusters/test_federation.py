"""Several clusters behind one queue tree (``engine.clusters``): each app placed once, on a
cluster it may use, before its launch; its copies in the other queues gone; a lost cluster's
queued apps elsewhere, its running ones ended only after its ``lost_timeout``.

Every case: clusters ``a`` and ``b`` of 4 cores each (``SIZES`` says otherwise), one leaf
``root.q`` (or the case's tree); apps of a whole cluster each (an in-cluster driver of 1 core
and at least one executor of 3) unless the case builds its own. Steps: (time, events) ->
what the case checks after it.
"""

from __future__ import annotations

import random

import pytest

from sessionsched.engine import (
    CapacityChanged,
    DriverExited,
    ExecutorsChanged,
    Forget,
    KillRequested,
    LaunchDriver,
    MarkState,
    PriorityChanged,
    Submitted,
    Tick,
)
from sessionsched.engine.budget import ADMISSION_SLICE, CycleBudget
from sessionsched.engine.clusters import (
    ClusterReachable,
    ClusterSpec,
    Federation,
    OnCluster,
    Placed,
    PlacementRule,
)
from sessionsched.engine.validate import EventError
from sessionsched.model import Resources
from tests.engine.engine_builders import app, executors, leaf, one_queue, tree


def whole(app_id: str, **kw) -> app:
    a = app(app_id).in_cluster(1).executor(3).min(1).max(1)
    for name, value in kw.items():
        a = getattr(a, name)(value)
    return a


def fed(sizes=None, root=None, placement=PlacementRule.SPILL, lost_timeout_s=600.0):
    sizes = sizes or {"a": 4, "b": 4}
    f = Federation(root or one_queue(), [ClusterSpec(n, lost_timeout_s=lost_timeout_s)
                                         for n in sizes], placement, driver_slots=None)
    f.step(0.0, [OnCluster(n, CapacityChanged(Resources(c, c * 4096))) for n, c in sizes.items()])
    return f


def placed(decisions) -> dict[str, str]:
    return {d.app_id: d.cluster for d in decisions if isinstance(d, Placed)}


def marks(decisions) -> list[tuple[str, str]]:
    return [(d.app_id, d.state.value) for d in decisions if isinstance(d, MarkState)]


def submit(*apps):
    return [Submitted(a.spec()) for a in apps]


def held_as_granted(f: Federation) -> list:
    """Each admitted app that holds other than it is granted, holding that now (as its agent
    would report once its executors came or went)."""
    return [ExecutorsChanged(a, executors(a, r.grant)) for e in f.engines.values()
            for a, r in e.apps.items() if r.state.admitted and len(r.executors) != r.grant]


def check(f: Federation, decisions) -> None:
    """Every launch right after its placement, on the books: nothing placed twice."""
    for i, d in enumerate(decisions):
        if isinstance(d, LaunchDriver):
            assert isinstance(decisions[i - 1], Placed) and decisions[i - 1].app_id == d.app_id
    assert f.check() == []


def test_spill_over_the_first_cluster_takes_what_fits_the_next_the_rest():
    f = fed()
    out = f.step(1.0, submit(whole("x"), whole("y"), whole("z")))
    check(f, out)
    assert placed(out) == {"x": "a", "y": "b"}
    assert [d.app_id for d in out if isinstance(d, LaunchDriver)] == ["x", "y"]
    assert f.queued["z"].copies == ["a", "b"]  # z waits in both queues
    out = f.step(2.0, [DriverExited("x", 0)])
    check(f, out)
    assert placed(out) == {"z": "a"}  # x's room freed on a
    assert marks(out).count(("x", "FINISHED")) == 1


@pytest.mark.parametrize("asked,queue_clusters,expected", [
    (("b",), (), "b"),
    ((), ("b",), "b"),
    (("a", "b"), ("b",), "b"),
], ids=["the-app-asks-for-b", "its-queue-may-use-b-only", "both-meet-at-b"])
def test_an_app_runs_where_it_and_its_queue_may(asked, queue_clusters, expected):
    f = fed(root=tree(leaf("q", clusters=queue_clusters)))
    a = whole("x")
    a._spec = a._spec.__class__(**{**_fields(a._spec), "clusters": asked})
    out = f.step(1.0, submit(a))
    check(f, out)
    assert placed(out) == {"x": expected}


def _fields(spec):
    return {name: getattr(spec, name) for name in spec.__dataclass_fields__
            if spec.__dataclass_fields__[name].init}


def test_an_app_no_cluster_may_run_is_refused_naming_the_clusters():
    f = fed(root=tree(leaf("q", clusters=("a",))))
    a = whole("x")
    a._spec = a._spec.__class__(**{**_fields(a._spec), "clusters": ("b",)})
    with pytest.raises(EventError) as e:
        f.step(1.0, submit(whole("ok"), a))
    assert str(e.value) == ("event 1 (Submitted x): no cluster it may use: it asked for b; "
                            "its queue root.q may use a")
    assert f.queued == {} and all(not e.apps for e in f.engines.values())  # nothing applied


def test_most_free_spreads_apps_over_the_clusters():
    f = fed({"a": 8, "b": 4}, placement=PlacementRule.MOST_FREE)
    out = f.step(1.0, submit(whole("x")))
    assert placed(out) == {"x": "a"}  # a tie: the listed order
    out = f.step(2.0, submit(whole("y")))
    assert placed(out) == {"y": "b"}  # a is half used now, b not at all
    check(f, out)


def test_weighted_places_by_weight():
    f = Federation(one_queue(), [ClusterSpec("a", weight=2), ClusterSpec("b", weight=1)],
                   PlacementRule.WEIGHTED, driver_slots=None)
    f.step(0.0, [OnCluster(n, CapacityChanged(Resources(40, 40 * 4096))) for n in "ab"])
    where = []
    for i in range(6):
        where += placed(f.step(1.0 + i, submit(whole(f"x{i}")))).values()
    assert where == ["a", "b", "a", "a", "b", "a"]


def test_a_priority_change_reorders_every_copy():
    f = fed()
    f.step(1.0, submit(whole("x"), whole("y")))  # both clusters taken
    f.step(2.0, submit(whole("p"), whole("q")))
    f.step(3.0, [PriorityChanged("q", 9000)])
    assert [e.pending("root.q") for e in f.engines.values()] == [["q", "p"], ["q", "p"]]
    out = f.step(4.0, [DriverExited("y", 0)])  # b frees first
    check(f, out)
    assert placed(out) == {"q": "b"}


def test_a_queued_app_killed_is_said_once_and_gone_from_every_queue():
    f = fed()
    f.step(1.0, submit(whole("x"), whole("y"), whole("z")))
    out = f.step(2.0, [KillRequested("z")])
    assert marks(out) == [("z", "KILLED")]
    out = f.step(3.0, [DriverExited("x", 0), DriverExited("y", 0)])
    assert placed(out) == {}  # z launched nowhere
    f.step(4.0, [Forget("z"), Forget("x"), Forget("y")])
    assert all(not e.apps for e in f.engines.values())
    assert f.check() == []


def test_max_wait_fails_a_queued_app_once():
    f = fed(root=one_queue(max_wait_s=60.0))
    f.step(1.0, submit(whole("x"), whole("y"), whole("z")))
    assert f.next_wakeup() == 60.0
    out = f.step(60.0, [Tick()])
    assert marks(out) == [("z", "FAILED")]
    assert f.check() == []


def test_an_outage_sends_the_queue_elsewhere_and_pinned_apps_wait_for_it():
    f = fed()
    pinned = whole("p")
    pinned._spec = pinned._spec.__class__(**{**_fields(pinned._spec), "clusters": ("b",)})
    f.step(1.0, submit(whole("x"), whole("y")))  # x on a, y on b
    out = f.step(2.0, [ClusterReachable("b", False), *submit(whole("z"), pinned)])
    check(f, out)
    assert f.queued["z"].copies == ["a"] and f.queued["p"].copies == ["b"]
    assert f.waits_for_lost("p") == "cluster b unreachable, and it may run on no other"
    out = f.step(3.0, [DriverExited("y", 0)])  # b's room frees, but b cannot be reached
    assert placed(out) == {}
    out = f.step(4.0, [DriverExited("x", 0)])
    assert placed(out) == {"z": "a"}
    out = f.step(5.0, [ClusterReachable("b", True), *submit(whole("w"))])
    check(f, out)
    assert placed(out) == {"p": "b"}  # p ahead of w; w waits in both again
    assert f.queued["w"].copies == ["a", "b"]


def test_a_lost_clusters_running_apps_end_after_its_lost_timeout_and_not_before():
    f = fed(lost_timeout_s=100.0)
    f.step(1.0, submit(whole("x"), whole("y")))
    f.step(2.0, [ExecutorsChanged("y", executors("y", 1))])
    f.step(10.0, [ClusterReachable("b", False)])
    assert f.next_wakeup() == 110.0
    assert marks(f.step(109.0, [Tick()])) == []
    out = f.step(110.0, [Tick()])
    assert marks(out) == [("y", "FAILED")]
    assert f.engines["b"].apps["y"].reason == (
        "cluster b lost: unreachable for 100s, beyond its lost_timeout of 100s")
    assert ("y", "FAILED") not in marks(f.step(500.0, [Tick()]))  # once


def test_every_cluster_silent_at_once_ends_nothing():
    f = fed(lost_timeout_s=100.0)
    f.step(1.0, submit(whole("x"), whole("y")))
    f.step(10.0, [ClusterReachable("a", False), ClusterReachable("b", False)])
    assert ended(f.step(1000.0, [Tick()])) == []
    f.step(1001.0, [ClusterReachable("a", True)])  # our network was down: b's clock restarts
    assert ended(f.step(1100.0, [Tick()])) == []
    assert ended(f.step(1101.0, [Tick()])) == [("y", "FAILED")]


def ended(decisions) -> list[tuple[str, str]]:
    return [(d.app_id, d.state.value) for d in decisions
            if isinstance(d, MarkState) and d.state.terminal]


def test_an_adopted_app_is_back_on_its_recorded_cluster_only():
    from sessionsched.engine import Adopted
    from sessionsched.model import AppState

    f = fed()
    spec = whole("x").spec()
    out = f.step(1.0, [OnCluster("b", Adopted(spec, AppState.RUNNING, 5000, 0.5))])
    assert "x" in f.engines["b"].apps and "x" not in f.engines["a"].apps
    assert f.cluster_of("x") == "b"
    check(f, out)


def test_a_bare_capacity_event_with_several_clusters_is_refused():
    f = fed()
    with pytest.raises(EventError, match="which cluster"):
        f.step(1.0, [CapacityChanged(Resources(8, 8192))])


@pytest.mark.parametrize("rule", list(PlacementRule))
def test_random_histories_place_every_app_once(rule):
    """Submissions, kills, priority changes, endings and outages at random: every launch is
    placed first, no app is launched twice, the books agree at every step."""
    rnd = random.Random(7)
    f = fed({"a": 8, "b": 4, "c": 6}, placement=rule, lost_timeout_s=50.0)
    launches: dict[str, int] = {}
    live: list[str] = []
    n = 0
    for t in range(1, 300):
        events = []
        for _ in range(rnd.randint(0, 3)):
            roll = rnd.random()
            if roll < 0.4:
                n += 1
                a = app(f"s{n}").in_cluster(1).executor(rnd.choice([1, 2, 3])).min(1).max(2)
                if rnd.random() < 0.2:
                    a._spec = a._spec.__class__(**{**_fields(a._spec),
                                                   "clusters": (rnd.choice("abc"),)})
                events.append(Submitted(a.spec()))
            elif roll < 0.55 and f.queued:
                events.append(PriorityChanged(rnd.choice(sorted(f.queued)), rnd.randint(1, 9999)))
            elif roll < 0.65 and f.queued:
                events.append(KillRequested(rnd.choice(sorted(f.queued))))
            elif roll < 0.85 and live:
                events.append(DriverExited(live.pop(rnd.randrange(len(live))), 0))
            elif roll < 0.9:
                name = rnd.choice("abc")
                events.append(ClusterReachable(name, not f.reachable[name]))
        ids = [getattr(e, "app_id", None) for e in events]
        if len(set(i for i in ids if i)) != len([i for i in ids if i]):
            continue  # one event per app a step keeps the history simple
        out = f.step(float(t), events)
        check(f, out)
        for d in out:
            if isinstance(d, LaunchDriver):
                launches[d.app_id] = launches.get(d.app_id, 0) + 1
                live.append(d.app_id)
            if isinstance(d, MarkState) and d.state.terminal and d.app_id in live:
                live.remove(d.app_id)
    assert launches and max(launches.values()) == 1
    assert all(f.cluster_of(a) for a in launches)


def test_a_lost_apps_driver_is_stopped_when_its_cluster_answers_again():
    from sessionsched.engine import StopDriver

    f = fed(lost_timeout_s=100.0)
    f.step(1.0, submit(whole("x"), whole("y")))
    f.step(10.0, [ClusterReachable("b", False)])
    f.step(110.0, [Tick()])  # y ended FAILED
    out = f.step(150.0, [ClusterReachable("b", True), *submit(whole("z"))])
    assert out[0] == StopDriver("y")
    assert [d for d in out if isinstance(d, StopDriver)] == [StopDriver("y")]
    assert placed(out) == {"z": "b"}  # after the stop, in y's room


def test_a_takeover_mid_burst_launches_every_app_exactly_once():
    """A new federation built from what the old one committed - each app's ``Placed`` cluster,
    its state - at random points of a burst over two clusters: adopted where recorded, the rest
    submitted again; no app is launched twice, every app is launched once."""
    from sessionsched.engine import Adopted
    from sessionsched.model import AppState

    rnd = random.Random(11)
    specs = {f"b{i}": app(f"b{i}").in_cluster(1).executor(rnd.choice([1, 2])).min(1).max(2)
             .spec() for i in range(60)}
    committed: dict[str, tuple[str, AppState]] = {}  # app -> (cluster, state), as a store has it
    launches: dict[str, int] = {}

    def step(f: Federation, t: float, events: list) -> None:
        out = f.step(t, events)
        check(f, out)
        for d in out:
            if isinstance(d, Placed):  # committed before the launch that follows
                committed[d.app_id] = (d.cluster, AppState.ACCEPTED)
            elif isinstance(d, LaunchDriver):
                launches[d.app_id] = launches.get(d.app_id, 0) + 1
            elif isinstance(d, MarkState) and d.app_id in committed:
                committed[d.app_id] = (committed[d.app_id][0], d.state)

    def running() -> list[str]:
        return [a for a, (_, st) in committed.items() if st.admitted and not st.terminal]

    f = fed({"a": 8, "b": 6})
    pending = list(specs.values())
    t = 1.0
    for _crash in range(12):
        for _ in range(rnd.randint(1, 4)):
            batch = [Submitted(s) for s in pending[:rnd.randint(0, 8)]]
            pending = pending[len(batch):]
            live = running()
            step(f, t, batch + [DriverExited(a, 0) for a in rnd.sample(live, min(len(live), 2))])
            t += 1.0
        # kill -9, and a new federation from the store
        f = fed({"a": 8, "b": 6})
        back = []
        for a, spec in specs.items():
            if a in committed:
                cluster, state = committed[a]
                if not state.terminal:
                    back.append(OnCluster(cluster, Adopted(spec, AppState.RUNNING,
                                                           spec.priority, 0.0)))
            elif spec not in pending:
                back.append(Submitted(spec))
        step(f, t, back)
        t += 1.0
    assert len(launches) > 20  # most of the burst was placed before the last takeover
    while pending or running() or len(launches) < len(specs):
        batch = [Submitted(s) for s in pending]
        pending = []
        step(f, t, batch + [DriverExited(a, 0) for a in running()])
        t += 1.0
        assert t < 500
    assert launches == dict.fromkeys(specs, 1)


@pytest.mark.parametrize("caps,expected", [
    ((), {"x": "a", "y": "a"}),
    ((("a", 3),), {"x": "a", "y": "b"}),
    ((("b", 3),), {"x": "a", "y": "a"}),
], ids=["no-cap: both on a", "a-capped-at-3-cores: the second spills to b", "a-cap-on-b-only"])
def test_a_queues_cap_on_one_cluster_holds_there_only(caps, expected):
    f = fed({"a": 8, "b": 8}, root=tree(leaf("q", cluster_max_cores=caps)))
    out = f.step(1.0, submit(whole("x"), whole("y")))
    check(f, out)
    assert placed(out) == expected


def test_a_new_tree_gives_each_cluster_its_caps():
    from sessionsched.engine import QueuesChanged

    f = fed({"a": 8, "b": 8})
    f.step(1.0, [QueuesChanged(tree(leaf("q", cluster_max_cores=(("a", 3),))))])
    assert f.engines["a"].root.children[0].max_cores == 3
    assert f.engines["b"].root.children[0].max_cores is None
    out = f.step(2.0, submit(whole("x"), whole("y")))
    assert placed(out) == {"x": "a", "y": "b"}


@pytest.mark.parametrize("limits,expected", [
    ({}, 4),
    ({"max_running_apps": 3}, 3),
], ids=["no-limit: two on each cluster", "max_running_apps 3: three over both clusters"])
def test_max_running_apps_counts_the_apps_on_every_cluster(limits, expected):
    f = fed({"a": 8, "b": 8}, root=tree(leaf("q", admission="reserve", **limits)))
    out = f.step(1.0, submit(*(whole(f"x{i}") for i in range(6))))
    check(f, out)
    assert len(placed(out)) == expected
    out = f.step(2.0, [DriverExited(next(iter(placed(out))), 0)])
    assert len(placed(out)) == 1  # one ended: one more, on whichever cluster
    assert sum(e.books.ledger.leaf("root.q").live for e in f.engines.values()) == expected


def test_a_parents_max_running_apps_counts_every_cluster():
    from tests.engine.engine_builders import parent
    f = fed({"a": 8, "b": 8}, root=tree(parent("p", leaf("q", admission="reserve"),
                                               leaf("r", admission="reserve"),
                                               max_running_apps=2)))
    apps = [whole("x").queue("p.q"), whole("y").queue("p.r"), whole("z").queue("p.q")]
    out = f.step(1.0, submit(*apps))
    assert sorted(placed(out)) == ["x", "y"]
    assert f.engines["a"].waiting or f.engines["b"].waiting


def test_an_app_runs_where_its_executors_are_free_now_not_where_it_would_wait_for_them():
    """Elastic apps (no executor floor) with their drivers on the scheduler's host: a's engine
    alone would start y beside x, to share a's cores with it; b has them free now: y runs
    there. With the room free nowhere, z is the last cluster's to take."""
    def elastic(app_id):  # its driver on the scheduler's host; up to one whole-cluster executor
        return app(app_id).executor(4).min(0).max(1)

    f = fed()
    check(f, out := f.step(1.0, submit(elastic("x"))))
    assert placed(out) == {"x": "a"}
    f.step(2.0, [ExecutorsChanged("x", executors("x", 1))])
    check(f, out := f.step(3.0, submit(elastic("y"))))
    assert placed(out) == {"y": "b"}
    f.step(4.0, [ExecutorsChanged("y", executors("y", 1))])
    check(f, out := f.step(5.0, submit(elastic("z"))))
    assert placed(out) == {"z": "b"}


def test_an_app_a_later_cluster_cannot_hold_is_not_kept_from_the_one_that_can():
    """b (2 cores) cannot hold y's 4-core executor: a, where y would share x's cores, takes
    it once b has held it aside."""
    f = fed(sizes={"a": 4, "b": 2})
    check(f, f.step(1.0, submit(app("x").executor(4).min(0).max(1))))
    f.step(2.0, [ExecutorsChanged("x", executors("x", 1))])
    out = f.step(3.0, submit(app("y").executor(4).min(0).max(1)))
    out += f.step(4.0, [Tick()])
    check(f, out)
    assert placed(out) == {"y": "a"}


@pytest.mark.parametrize("shared, first", [(True, "y1"), (False, "x2")],
                         ids=["decayed-usage-over-every-cluster", "each-cluster-its-own"])
def test_decayed_usage_is_the_trees_over_every_cluster(shared, first):
    """x used all of a for an hour (z all of b); b frees room for one of x2 (x, submitted
    first) and y1 (y, never used anything): y1 goes first, x's decayed usage on a counting on
    b too.
    Each cluster's own (the books not shared) would let x2 in by its submission."""
    f = fed(root=tree(leaf("x"), leaf("y"), leaf("z"), usage_half_life_s=3600))
    if not shared:
        for engine in f.engines.values():
            engine.books.decay.beside = ()
    check(f, out := f.step(1.0, submit(whole("x1", queue="root.x"),
                                       whole("b1", queue="root.z"))))
    assert placed(out) == {"x1": "a", "b1": "b"}
    f.step(2.0, [ExecutorsChanged("x1", executors("x1", 1)),
                 ExecutorsChanged("b1", executors("b1", 1))])
    f.step(3600.0, [Tick()])
    check(f, f.step(3601.0, submit(whole("x2", queue="root.x"), whole("y1", queue="root.y"))))
    out = f.step(3602.0, [DriverExited("b1", 0)])
    check(f, out)
    assert placed(out) == {first: "b"}


def test_a_burst_behind_two_clusters_launches_one_slice_a_step_in_rank_order():
    # 1-core apps (client-mode drivers, one 1-core executor) on two clusters of 8 cores: 16
    # fit at once; the admission slice is 3 a step for the whole federation, not for each
    # engine, so a step behind several clusters stays as short as one cluster's
    sizes = {"a": 8, "b": 8}
    f = Federation(one_queue(), [ClusterSpec(n) for n in sizes], PlacementRule.SPILL,
                   driver_slots=None, budget=CycleBudget(admit=3))
    f.step(0.0, [OnCluster(n, CapacityChanged(Resources(c, c * 4096))) for n, c in sizes.items()])
    burst = [app(f"x{i:02d}").executor(1).min(0).max(1) for i in range(12)]
    launched: list[str] = []
    out = f.step(1.0, submit(*burst))
    for t in range(2, 8):
        check(f, out)
        now = [d.app_id for d in out if isinstance(d, LaunchDriver)]
        assert len(now) <= 3, now
        launched += now
        if len(launched) < 12:
            waits = {e.waiting["root.q"].text for e in f.engines.values()
                     if "root.q" in e.waiting}
            assert ADMISSION_SLICE.format(n=3) in waits
        out = f.step(float(t), [])
    assert launched == [f"x{i:02d}" for i in range(12)]  # each once, in submission order
    assert set(placed_on(f, launched)) == {"a", "b"}  # both clusters took some


def placed_on(f: Federation, apps: list[str]) -> list[str]:
    return [f.owner[a] for a in apps]
