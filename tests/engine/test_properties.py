"""Properties of the engine over random queue trees and random histories (hypothesis).

A history is a burst of submissions, then actions: submit, priority change, demand change or a
surge of demand, kill, driver exit, executors idling, time passing, capacity change, and
``settle`` (the cluster carries out every order so far: stopped drivers exit, reclaimed
executors go, granted ones start). ``Cluster`` plays the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionsched.engine import (
    CapacityChanged,
    DemandChanged,
    DriverExited,
    ExecutorsChanged,
    KillRequested,
    PriorityChanged,
    Reclaim,
    Scheduler,
    StopDriver,
    Submitted,
    Tick,
)
from sessionsched.engine.arbitration import Claim, compute_targets
from sessionsched.model import (
    Admission,
    AppSpec,
    Executor,
    Policy,
    Queue,
    ReclaimMode,
    Resources,
)

FAST = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# --- strategies ---------------------------------------------------------------------------

leaf_settings = st.fixed_dictionaries(
    {
        "admission": st.sampled_from(list(Admission)),
        "policy": st.sampled_from(list(Policy)),
        "weight": st.sampled_from([1.0, 2.0, 3.0]),
        "min_share_cores": st.sampled_from([0, 0, 2, 6]),
        "max_cores": st.sampled_from([None, None, 3, 8]),
        "max_running_apps": st.sampled_from([None, None, 1, 3]),
        "starting_limit": st.integers(1, 2),
        "starting_timeout_s": st.sampled_from([5.0, 300.0]),
        "reclaim_timeout_s": st.sampled_from([0.0, 10.0, -1.0]),
        "max_wait_s": st.sampled_from([None, None, 10.0, 30.0]),
    }
)
parent_settings = st.fixed_dictionaries(
    {
        "weight": st.sampled_from([1.0, 2.0]),
        "min_share_cores": st.sampled_from([0, 4]),
        "max_cores": st.sampled_from([None, None, 6]),
        "max_running_apps": st.sampled_from([None, None, 2]),
    }
)


@st.composite
def trees(draw, leaf=leaf_settings) -> Queue:
    parents = []
    for i in range(draw(st.integers(1, 3))):
        leaves = tuple(
            Queue(name=f"root.p{i}.l{j}", **draw(leaf)) for j in range(draw(st.integers(1, 3)))
        )
        parents.append(Queue(name=f"root.p{i}", children=leaves, **draw(parent_settings)))
    return Queue(name="root", children=tuple(parents))


app_params = st.fixed_dictionaries(
    {
        "leaf": st.integers(0, 99),
        "priority": st.sampled_from([1, 1000, 5000, 5000, 9000, 10000]),
        "in_cluster": st.booleans(),
        "executor": st.sampled_from([(1, 1024), (2, 2048), (4, 1024), (1, 4096)]),
        "min": st.sampled_from([0, 0, 0, 1, 2]),
        "max": st.sampled_from([None, None, 2, 6, 0]),  # 0: may start with no cluster room
        "slots_max": st.sampled_from([None, None, 4]),
        "demand": st.integers(0, 12),
    }
)
index = st.integers(0, 99)
submit = st.tuples(st.just("submit"), app_params)
settle = st.tuples(st.just("settle"))
action = st.one_of(
    submit,
    submit,
    st.tuples(st.just("priority"), index, st.integers(1, 10000)),
    st.tuples(st.just("demand"), index, st.integers(0, 12)),
    st.tuples(st.just("demand"), index, st.integers(0, 12)),
    st.tuples(st.just("kill"), index),
    st.tuples(st.just("exit"), index, st.sampled_from([0, 1])),
    st.tuples(st.just("idle"), index),
    st.tuples(st.just("tick"), st.sampled_from([1.0, 6.0, 11.0])),
    st.tuples(st.just("surge")),
    settle,
    settle,
    settle,
)
capacity_action = st.tuples(st.just("capacity"), st.integers(0, 40), st.integers(0, 64))


def histories(*actions):
    """A burst of submissions, then anything."""
    return st.builds(
        lambda burst, rest: burst + rest,
        st.lists(submit, min_size=1, max_size=8),
        st.lists(st.one_of(*actions), max_size=30),
    )

# --- the cluster --------------------------------------------------------------------------


@dataclass
class Cluster:
    """Plays Spark: turns a history into event batches and carries out the decisions."""

    root: Queue
    sched: Scheduler
    now: float = 0.0
    ids: list[str] = field(default_factory=list)
    executors: dict[str, dict[str, Executor]] = field(default_factory=dict)
    doomed: dict[str, set[str]] = field(default_factory=dict)
    stopping: list[str] = field(default_factory=list)
    counter: int = 0
    log: list = field(default_factory=list)

    def events_for(self, act: tuple) -> list:
        kind = act[0]
        leaves = self.root.leaves()
        if kind == "submit":
            p = act[1]
            app_id = f"a{len(self.ids)}"
            spec = AppSpec(
                app_id=app_id,
                queue=leaves[p["leaf"] % len(leaves)].name,
                seq=len(self.ids),
                submitted_at=self.now,
                priority=p["priority"],
                driver=Resources(1, 1024),
                driver_in_cluster=p["in_cluster"],
                executor=Resources(*p["executor"]),
                min_executors=p["min"],
                max_executors=None if p["max"] is None else max(p["max"], p["min"]),
                slots_max=p["slots_max"],
            )
            self.ids.append(app_id)
            return [Submitted(spec), DemandChanged(app_id, p["demand"])]
        if kind == "tick":
            self.now += act[1]
            return [Tick()]
        if kind == "settle":
            return self.settle()
        if kind == "surge":  # every app wants more than the cluster has
            return [DemandChanged(a, 12) for a in self.ids]
        if kind == "capacity":
            return [CapacityChanged(Resources(act[1], act[2] * 1024))]
        if not self.ids:
            return []
        app_id = self.ids[act[1] % len(self.ids)]
        rec = self.sched.apps[app_id]
        if kind == "priority":
            return [PriorityChanged(app_id, act[2])]
        if kind == "demand":
            return [DemandChanged(app_id, act[2])]
        if kind == "kill":
            return [KillRequested(app_id)]
        if kind == "exit":
            if not rec.state.admitted:
                return []
            self.executors.pop(app_id, None)
            return [DriverExited(app_id, act[2])]
        if kind == "idle":
            have = self.executors.get(app_id, {})
            for eid, e in have.items():
                have[eid] = Executor(eid, e.started_at, idle=True)
            return [ExecutorsChanged(app_id, tuple(have.values()))] if have else []
        raise AssertionError(kind)

    def settle(self) -> list:
        """Stopped drivers exit; reclaimed executors go; apps start executors up to their grant
        as far as their demand goes."""
        events = [DriverExited(a, 143) for a in self.stopping]
        for a in self.stopping:
            self.executors.pop(a, None)
            self.doomed.pop(a, None)
        self.stopping = []
        for app_id in list(self.executors) + [a for a in self.ids if a not in self.executors]:
            rec = self.sched.apps[app_id]
            if not (rec.state.admitted or self.executors.get(app_id)):
                continue
            have = self.executors.setdefault(app_id, {})
            before = dict(have)
            for eid in self.doomed.pop(app_id, ()):
                have.pop(eid, None)
            while rec.state.admitted and len(have) < min(rec.grant, max(rec.demand, rec.floor)):
                self.counter += 1
                have[f"e{self.counter}"] = Executor(f"e{self.counter}", started_at=self.now)
            if have != before:
                events.append(ExecutorsChanged(app_id, tuple(have.values())))
        return events

    def step(self, events: list) -> list:
        out = self.sched.step(self.now, events)
        self.log.append(out)
        for d in out:
            if isinstance(d, Reclaim):
                self.doomed.setdefault(d.app_id, set()).update(d.executor_ids)
            elif isinstance(d, StopDriver):
                self.stopping.append(d.app_id)
        return out


def play(root: Queue, cores: int, mem_gib: int, slots: int, history: list, check=None) -> Cluster:
    sched = Scheduler(root, Resources(cores, mem_gib * 1024), slots)
    cluster = Cluster(root, sched)
    for act in history:
        cluster.step(cluster.events_for(act))
        if check is not None:
            check(cluster)
    return cluster


# --- invariants ---------------------------------------------------------------------------


def executor_capacity(sched: Scheduler) -> Resources:
    drivers = Resources()
    for r in sched.apps.values():
        if r.state.admitted and r.spec.driver_in_cluster:
            drivers = drivers + r.spec.driver
    return sched.capacity - drivers


def check_invariants(cluster: Cluster) -> None:
    sched = cluster.sched
    assert sched.check() == []
    cap = executor_capacity(sched)
    live = [r for r in sched.apps.values() if r.state.admitted]
    for field_ in ("target", "grant"):
        cores = sum(getattr(r, field_) * r.spec.executor.cores for r in live)
        mem = sum(getattr(r, field_) * r.spec.executor.mem_mib for r in live)
        assert cores <= max(cap.cores, 0) and mem <= max(cap.mem_mib, 0), field_
    for r in live:
        assert 0 <= r.grant <= r.target <= max(r.demand, r.floor)
        if r.spec.executor_cap is not None:
            assert r.target <= r.spec.executor_cap
    for q in sched.root.walk():
        if q.max_cores is not None:
            under = sum(
                r.target * r.spec.executor.cores
                for r in live
                if r.spec.queue == q.name or r.spec.queue.startswith(q.name + ".")
            )
            assert under <= q.max_cores, q.name
    check_reclaim_serves_a_need(cluster)
    for r in sched.apps.values():  # no app stays queued past its leaf's max_wait
        limit = sched.queue(r.spec.queue).max_wait_s
        if r.state.value == "ACCEPTED" and limit is not None:
            assert cluster.now - r.spec.submitted_at < limit, r.app_id
    on_books = [r for r in sched.apps.values() if r.on_books]
    held = sum(r.held * r.spec.executor.cores for r in on_books)
    if held <= cap.cores:  # no overcommit while reclaims are in flight
        promised = sum(max(r.held, r.grant) * r.spec.executor.cores for r in on_books)
        assert promised <= cap.cores


def check_reclaim_serves_a_need(cluster: Cluster) -> None:
    """A step that orders executors back has an app short of its target (grant < target) at
    its end, or takes them from an app that still wants more than its target (its queue's
    caps hold it below what it holds): nothing is taken only because its app's own demand
    dipped. Kills at a decommission deadline finish an earlier order and are not new ones."""
    sched = cluster.sched
    decommissioned = {
        (d.app_id, e)
        for out in cluster.log[:-1]
        for d in out
        if isinstance(d, Reclaim) and d.mode is ReclaimMode.DECOMMISSION
        for e in d.executor_ids
    }
    new = [
        d
        for d in cluster.log[-1]
        if isinstance(d, Reclaim)
        and not (d.mode is ReclaimMode.KILL and {(d.app_id, e) for e in d.executor_ids}
                 <= decommissioned)
    ]
    short = [r.app_id for r in sched.apps.values() if r.state.admitted and r.grant < r.target]
    for d in new:  # only from apps above their target
        r = sched.apps[d.app_id]
        assert r.held - len(d.executor_ids) >= r.target, d
        assert short or r.demand > r.target, (d, r)  # a need, or its queue's caps


@FAST
@given(
    root=trees(),
    cores=st.integers(0, 40),
    mem_gib=st.integers(1, 64),
    slots=st.integers(0, 6),
    history=histories(action, capacity_action),
)
def test_targets_and_grants_stay_within_capacity_and_caps(root, cores, mem_gib, slots, history):
    play(root, cores, mem_gib, slots, history, check=check_invariants)


# --- reserve: every admitted app gets its reservation --------------------------------------

# Reclaim modes 0 and > 0 only: under -1 a busy executor is never taken, so grants may wait.
def _preemptive(s: dict) -> dict:
    return {**s, "reclaim_timeout_s": max(s["reclaim_timeout_s"], 0.0)}


reserve_leaf = leaf_settings.map(lambda s: {**_preemptive(s), "admission": Admission.RESERVE})
mixed_leaf = leaf_settings.map(_preemptive)


def reserve_apps(sched: Scheduler) -> list:
    return [
        r
        for r in sched.apps.values()
        if r.state.admitted and sched.queue(r.spec.queue).admission is Admission.RESERVE
    ]


@FAST
@given(
    root=st.one_of(trees(leaf=reserve_leaf), trees(leaf=mixed_leaf)),
    cores=st.integers(0, 40),
    slots=st.integers(0, 6),
    history=histories(action),
)
def test_reserve_never_leaves_an_admitted_app_without_its_reservation(root, cores, slots, history):
    def floors_are_targets(cluster: Cluster) -> None:
        for r in reserve_apps(cluster.sched):
            assert r.target >= r.floor, r.app_id

    cluster = play(root, cores, 64, slots, history, check=floors_are_targets)
    # Once the cluster has carried out every order, each reservation is granted, not only owed.
    # Reserve admission starts one app at a time (each: its launch, then its first executor),
    # and each start may move targets and reclaim once more: the rounds to a quiet cluster
    # grow with the apps (8 apps queued behind one leaf's starting place took 8).
    for _ in range(6 + 3 * len(cluster.ids)):
        if not cluster.step(cluster.settle()):
            break
    else:
        raise AssertionError("the cluster never came to rest")
    for r in reserve_apps(cluster.sched):
        assert r.grant >= r.floor, r.app_id
    # and every reclaim has been carried out: no app is still short while another holds
    # executors above its target (above-target executors nobody needs are kept).
    apps = cluster.sched.apps.values()
    short = [r.app_id for r in apps if r.state.admitted and r.grant < r.target]
    over = [r.app_id for r in apps if r.held > (r.target if r.state.admitted else 0)]
    assert not (short and over), (short, over)


# --- fairshare follows priority weights ---------------------------------------------------


@FAST
@given(
    priorities=st.lists(st.integers(1, 10000), min_size=2, max_size=6),
    size=st.sampled_from([1, 2, 4]),
    cores=st.integers(1, 200),
    memory_bound=st.booleans(),
)
def test_fairshare_shares_follow_priority_weights(priorities, size, cores, memory_bound):
    """``cores`` is what the cluster can back: its cores, or (memory-bound) its memory, with
    ten times the cores idle beside it."""
    executor = Resources(size, 2048 * size)
    claims = [
        Claim(f"a{i}", "root.q", p, i, executor, floor=0, want=cores)  # all want more
        for i, p in enumerate(priorities)
    ]
    root = Queue("root", children=(Queue("root.q", policy=Policy.FAIRSHARE),))
    capacity = Resources(10 * cores + size, 2048 * cores) if memory_bound else Resources(
        cores, 1 << 30)
    got = compute_targets(root, capacity, claims)
    total = sum(priorities)
    for c in claims:
        share = cores * c.priority / total  # in cores
        assert abs(got[c.app_id] * size - share) <= size, (c.app_id, got, share)
    assert cores - sum(got.values()) * size < size  # no whole executor left unused


# --- determinism --------------------------------------------------------------------------


@FAST
@given(
    root=trees(),
    cores=st.integers(0, 40),
    slots=st.integers(0, 6),
    history=histories(action, capacity_action),
)
def test_same_inputs_give_the_same_decisions(root, cores, slots, history):
    first = play(root, cores, 64, slots, history)
    # A fresh scheduler fed the very batches the first one got decides exactly the same.
    batches = []
    replay = Scheduler(root, Resources(cores, 64 * 1024), slots)
    fresh = Cluster(root, Scheduler(root, Resources(cores, 64 * 1024), slots))
    for act in history:
        batches.append(fresh.events_for(act))
        fresh.step(batches[-1])
    assert fresh.log == first.log
    assert [replay.step(t, b) for t, b in zip(_times(history), batches, strict=True)] == first.log


def _times(history: list) -> list[float]:
    now, out = 0.0, []
    for act in history:
        if act[0] == "tick":
            now += act[1]
        out.append(now)
    return out


def test_a_tick_changes_nothing_when_nothing_is_due():
    root = Queue("root", children=(Queue("root.q"),))
    cluster = play(root, 8, 8, 2, [("submit", {"leaf": 0, "priority": 5000, "in_cluster": False,
                                               "executor": (1, 1024), "min": 0, "max": None,
                                               "slots_max": None, "demand": 3}), ("settle",)])
    assert cluster.step([Tick()]) == []
