"""Every waiting app's reason is true at every step of random histories (docs/user/reasons.md).

Seeded histories of many steps over a tree with every admission mode and policy: submissions,
priority changes, demand, drivers reported up, executors started and idled (``Cluster`` of
``test_properties`` carries out the engine's orders), finishes, kills, time passing and the
cluster's capacity and driver slots changing. After each step, for every leaf with queued apps:

* its head's code is the first, by ``waits.PRECEDENCE``, of the checks that fail when they are
  evaluated again from scratch: the simple ones (queue limits, starting limit, driver slot,
  room for the driver, room for the first executors, ``max_cores``) by this file's own
  counting over the apps, the rest (``driver_share``, ``running_demand``) by the engine's
  functions on a ``Room`` built from scratch (``Ledger``/``NeedBook`` recounts, not the kept
  indexes);
* its head's sentence is the one those checks write on the room from scratch, so its numbers
  (apps counted, cores needed and free, who holds them) are the books' true figures;
* every app behind the head has ``behind_app``, naming the head and how many are ahead of it;
* an app is held aside with ``does_not_fit_now`` exactly when ``placement.never_fits`` says the
  cluster as it is now cannot hold it (the capacity shrinks in these histories), with that
  line; the head is the first app not held aside;
* admission's room as the engine keeps it between steps (each leaf worked out again only when
  its totals or its queue moved) is the room a keeper that has seen nothing builds.
"""

from __future__ import annotations

import copy
import random
import re
from collections import Counter

import pytest
from test_properties import Cluster

from sessionsched.engine import (
    CapacityChanged,
    DriverStarted,
    LaunchDriver,
    SetTarget,
    admission_checks,
)
from sessionsched.engine.admission import LeafView, Room, weight_shares
from sessionsched.engine.admission_checks import reservation
from sessionsched.engine.budget import UNBOUNDED, CycleBudget
from sessionsched.engine.ledger import Ledger
from sessionsched.engine.needs import NeedBook
from sessionsched.engine.placement import Workers, never_fits
from sessionsched.engine.room.keeper import RoomKeeper
from sessionsched.engine.scheduler import Scheduler
from sessionsched.engine.view import ViewKeeper
from sessionsched.engine.waits import PRECEDENCE, Wait, WaitCode
from sessionsched.model import Admission, AppState, Policy, Queue, Resources

# Which checks each mode runs, written out here rather than read from ADMISSION_MODES.
RUNS = {
    Admission.DEMAND: {"queue", "slot", "share", "executors", "demand"},
    Admission.STATEAWARE: {"queue", "starting", "slot", "driver_room"},
    Admission.RESERVE: {"queue", "slot", "executors"},
    Admission.NONE: {"queue", "slot", "driver_room"},
}


def random_tree(rnd: random.Random) -> Queue:
    """Two parents of two or three leaves; every mode and policy drawn, limits now and then."""
    modes, policies = list(Admission), list(Policy)
    rnd.shuffle(modes)
    parents = []
    n = 0
    for i in range(2):
        leaves = []
        for j in range(rnd.choice((2, 3))):
            leaves.append(Queue(
                name=f"root.p{i}.l{j}",
                admission=modes[n % len(modes)] if n < len(modes) else rnd.choice(modes),
                policy=rnd.choice(policies),
                weight=rnd.choice((1.0, 2.0)),
                max_cores=rnd.choice((None, None, 4, 8)),
                max_running_apps=rnd.choice((None, None, 1, 3)),
                starting_limit=rnd.choice((1, 2)),
                starting_timeout_s=rnd.choice((5.0, 60.0)),
                max_driver_fraction=rnd.choice((0.2, 0.4, 0.6)),
            ))
            n += 1
        parents.append(Queue(name=f"root.p{i}", children=tuple(leaves),
                             max_cores=rnd.choice((None, 10)),
                             max_running_apps=rnd.choice((None, None, 3))))
    return Queue(name="root", children=tuple(parents))


def random_action(rnd: random.Random) -> tuple:
    r = rnd.random()
    if r < 0.3:
        return ("submit", {
            "leaf": rnd.randrange(100), "priority": rnd.choice((1, 1000, 5000, 5000, 9000)),
            "in_cluster": rnd.random() < 0.6,
            "executor": rnd.choice(((1, 1024), (2, 2048), (4, 1024), (1, 4096))),
            "min": rnd.choice((0, 0, 1, 2)), "max": rnd.choice((None, 1, 2, 6)),
            "slots_max": rnd.choice((None, None, 4)), "demand": rnd.randint(0, 8)})
    if r < 0.38:
        return ("priority", rnd.randrange(100), rnd.choice((1, 1000, 5000, 9000, 10000)))
    if r < 0.48:
        return ("demand", rnd.randrange(100), rnd.randint(0, 10))
    if r < 0.53:
        return ("exit", rnd.randrange(100), rnd.choice((0, 1)))
    if r < 0.55:
        return ("kill", rnd.randrange(100))
    if r < 0.58:
        return ("idle", rnd.randrange(100))
    if r < 0.64:
        return ("tick", rnd.choice((1.0, 6.0, 61.0)))
    if r < 0.68:
        return ("capacity", rnd.randint(2, 30), rnd.randint(4, 64), rnd.randint(1, 4))
    if r < 0.76:
        return ("up", rnd.randrange(100))
    if r < 0.8:  # tiny apps, mostly JVM starts: driver-heavy ones that fit whole
        return ("burst", {
            "leaf": rnd.randrange(100), "priority": 5000, "in_cluster": True,
            "executor": (1, 1024), "min": 0, "max": 1, "slots_max": None, "demand": 1})
    return ("settle",)


def events_for(cluster: Cluster, act: tuple) -> list:
    """``Cluster.events_for``, with drivers reported up and driver slots changing too."""
    if act[0] == "burst":
        return [ev for _ in range(3) for ev in cluster.events_for(("submit", act[1]))]
    if act[0] == "capacity":
        return [CapacityChanged(Resources(act[1], act[2] * 1024), act[3])]
    if act[0] == "up":
        if not cluster.ids:
            return []
        app_id = cluster.ids[act[1] % len(cluster.ids)]
        rec = cluster.sched.apps[app_id]
        if rec.state is not AppState.STARTING:
            return []
        return [DriverStarted(app_id)]
    return cluster.events_for(act)


# --- the checks again, from scratch ----------------------------------------------------------


def under(rec, node: Queue) -> bool:
    q = rec.spec.queue
    return q == node.name or q.startswith(node.name + ".")


def path_of(root: Queue, leaf: str) -> tuple[Queue, ...]:
    out, node = [root], root
    while node.name != leaf:
        node = next(c for c in node.children if leaf == c.name or leaf.startswith(c.name + "."))
        out.append(node)
    return tuple(out)


def fresh_room(sched: Scheduler) -> Room:
    """The room admission would see, from a recount over the apps (no kept index)."""
    recs = list(sched.apps.values())
    reserves = {q.name: q.admission is Admission.RESERVE for q in sched.root.leaves()}
    leaf_totals = {q.name: Ledger.recount((r, reserves[q.name]) for r in recs
                                          if r.spec.queue == q.name)
                   for q in sched.root.leaves()}
    t = Ledger.recount((r, reserves[r.spec.queue]) for r in recs)
    drivers = Resources(t.driver_cores, t.driver_mem_mib)
    needs = NeedBook.recount(recs)

    def need_of(leaf: str, p: int) -> Resources:
        sums = [s for q, s in needs.get(leaf, {}).items() if q >= p]
        return Resources(sum(s[0] for s in sums), sum(s[1] for s in sums))

    def weight_of(leaf: str, p: int) -> int:
        return sum(q * s[2] for q, s in needs.get(leaf, {}).items() if q >= p)

    room = Room(
        free=sched.capacity - drivers - Resources(t.committed_cores, t.committed_mem_mib),
        uncommitted=sched.capacity - drivers - Resources(t.floor_cores, t.floor_mem_mib),
        driver_slots_free=sched.driver_slots - t.client_drivers,
        driver_slots=sched.driver_slots, capacity=sched.capacity,
        need_of=need_of, weight_of=weight_of,
    )
    for node in sched.root.walk():
        leaves = [q.name for q in node.leaves()] if not node.is_leaf else [node.name]
        room.admitted_in[node.name] = sum(leaf_totals[x].live for x in leaves)
        room.floor_cores_in[node.name] = sum(leaf_totals[x].floor_cores for x in leaves)
    busy = []
    for leaf, lt in leaf_totals.items():
        if lt.live or any(r.state is AppState.ACCEPTED and r.spec.queue == leaf for r in recs):
            busy.append(leaf)
        room.drivers_in[leaf] = Resources(lt.driver_cores - lt.alone_driver_cores,
                                          lt.driver_mem_mib - lt.alone_driver_mem_mib)
        room.whole_in[leaf] = Resources(lt.whole_cores, lt.whole_mem_mib)
        room.unbounded_in[leaf] = lt.unbounded
        room.ahead_in[leaf] = lt.ahead
    room.weight_share = weight_shares(sched.root, frozenset(busy))
    return room


def starting_in(sched: Scheduler, leaf: Queue) -> int:
    return sum(1 for r in sched.apps.values()
               if r.state is AppState.STARTING and r.spec.queue == leaf.name)


def failing(sched: Scheduler, leaf: Queue, head, room: Room) -> list[Wait | WaitCode]:
    """Every check of the leaf's mode that fails for its head: codes by this file's counting,
    Waits from the engine's functions (for the checks not counted here)."""
    recs = [r for r in sched.apps.values()]
    live = [r for r in recs if r.state.admitted]
    spec = head.spec
    runs = RUNS[leaf.admission]
    path = path_of(sched.root, leaf.name)
    out: list = []
    for node in path:
        n = sum(1 for r in live if under(r, node))
        if node.max_running_apps is not None and n >= node.max_running_apps:
            out.append(WaitCode.QUEUE_LIMIT if node is leaf else WaitCode.PARENT_QUEUE_FULL)
    if "starting" in runs:
        if starting_in(sched, leaf) >= leaf.starting_limit:
            out.append(WaitCode.STARTING_LIMIT)
    if not spec.driver_in_cluster and sum(
            1 for r in live if not r.spec.driver_in_cluster) >= sched.driver_slots:
        out.append(WaitCode.DRIVER_SLOT)
    in_cluster = Resources()
    for r in live:
        if r.spec.driver_in_cluster:
            in_cluster = in_cluster + r.spec.driver
    if "driver_room" in runs and spec.driver_in_cluster:
        held = Resources()
        for r in recs:
            if r.on_books:
                reserve = sched.queue(r.spec.queue).admission is Admission.RESERVE
                n = max(r.held, r.grant, r.floor if reserve else 0) if r.state.admitted \
                    else r.held
                held = held + r.spec.executor.times(n)
        if not spec.driver.fits_in(sched.capacity - in_cluster - held):
            out.append(WaitCode.DRIVER_ROOM)
    if "executors" in runs:
        floors = Resources()
        for r in live:
            floors = floors + r.spec.executor.times(r.floor)
        n = reservation(spec)
        need = spec.executor.times(n) + (spec.driver if spec.driver_in_cluster else Resources())
        if not need.fits_in(sched.capacity - in_cluster - floors):
            out.append(WaitCode.EXECUTOR_ROOM)
        for node in path:
            floor_cores = sum(r.floor * r.spec.executor.cores for r in live if under(r, node))
            if node.max_cores is not None and floor_cores + n * spec.executor.cores > \
                    node.max_cores:
                out.append(WaitCode.QUEUE_MAX_CORES)
    view = LeafView(leaf, [spec], {spec.app_id: head.priority}, starting_in(sched, leaf))
    for name, check in (("share", admission_checks.driver_share),
                        ("demand", admission_checks.running_demand)):
        if name in runs and (w := check(view, spec, path, room)) is not None:
            out.append(w)
    return out


def code(x: Wait | WaitCode) -> WaitCode:
    return x.code if isinstance(x, Wait) else x


NOW = [0.0]  # the history's clock, for a step taken again (``freed_after_admission``)
FREE = re.compile(r"(\d+) cores/(\d+) MiB is free|the cluster has (\d+) cores/(\d+) MiB")


def same_but_free(wait: Wait, again: Wait | None) -> None:
    """``driver_room`` gives the room free when admission looked: arbitration runs after it in
    the same step and moves grants (up into free room, down when capacity shrank), which moves
    what is free. So: the same driver's needs and the same cluster as from scratch, and the
    driver does not fit in the free figures given (the code's check above found it does not
    fit in today's either)."""
    assert again is not None and again.code is wait.code
    needs = re.search(r"it needs (\d+) cores/(\d+) MiB", wait.text)
    assert needs[0] == re.search(r"it needs (\d+) cores/(\d+) MiB", again.text)[0]
    was = [int(x) for x in FREE.search(wait.text).groups() if x is not None]
    assert int(needs[1]) > was[0] or int(needs[2]) > was[1], wait
    capacity = re.search(r"(?:of|has) (\d+ cores/\d+ MiB)", wait.text)[1]
    assert capacity == re.search(r"(?:of|has) (\d+ cores/\d+ MiB)", again.text)[1]


def freed_after_admission(sched: Scheduler, out: list, leaf: Queue, head, seen: Counter) -> None:
    """A driver that did not fit when admission looked may fit at the step's end: arbitration,
    after admission, took grants not started yet back (a new in-cluster driver or a smaller
    cluster cut the targets). Then the step moved grants, and the next step, with no news,
    admits the head or defers it with a reason that is true."""
    assert any(isinstance(d, SetTarget) for d in out), "no grant moved, yet the room grew"
    again = copy.deepcopy(sched, {id(sched._views): ViewKeeper()})  # its views: not copyable
    launched = [d.app_id for d in again.step(NOW[0], []) if isinstance(d, LaunchDriver)]
    if head.app_id not in launched:
        check_waits(again, False, seen, None)


def check_waits(sched: Scheduler, slice_used: bool, seen: Counter,
                out: list | None = None) -> None:
    view = sched.view()
    room = fresh_room(sched)
    workers = Workers((), sched.capacity)  # from scratch: no worker is named here
    for leaf in sched.root.leaves():
        listed = sched.pending(leaf.name)
        # held aside: the apps the walk reached that the cluster as it is now cannot hold
        # (placement.never_fits), up to the first it can: the head
        for app_id in listed:
            why = never_fits(sched.apps[app_id].spec, path_of(sched.root, leaf.name), workers)
            aside = sched.held.get(app_id)
            if aside is None:
                assert why is None or slice_used, (app_id, why)  # the head fits now
                break
            seen[aside.code] += 1
            assert aside == Wait(WaitCode.DOES_NOT_FIT_NOW,
                                 f"does not fit the cluster as it is now: {why}")
            assert view.wait_of(app_id) == aside
        pending = [a for a in listed if a not in sched.held]
        if not pending:
            assert leaf.name not in sched.waiting
            continue
        wait = sched.waiting.get(leaf.name)
        assert wait is not None, f"{leaf.name}: {len(pending)} queued, no reason"
        seen[wait.code] += 1
        head = sched.apps[pending[0]]
        assert view.wait_of(head.app_id) == wait
        if wait.code is WaitCode.ADMISSION_SLICE:
            assert slice_used, f"{leaf.name}: {wait.text}, but the slice was not used up"
        else:
            fails = failing(sched, leaf, head, room)
            if not fails and wait.code is WaitCode.DRIVER_ROOM and out is not None:
                freed_after_admission(sched, out, leaf, head, seen)
                continue
            assert fails, f"{leaf.name}: {wait}, but no check fails for {head.app_id}"
            first = min(fails, key=lambda x: PRECEDENCE[code(x)])
            assert wait.code is code(first), (leaf.name, wait, fails)
            # the sentence, numbers and all, is the one the books from scratch give
            again = admission_checks.defer_reason(
                LeafView(leaf, [head.spec], {head.app_id: head.priority},
                         starting_in(sched, leaf)),
                head.spec, path_of(sched.root, leaf.name), room)
            if wait.code is WaitCode.DRIVER_ROOM:
                same_but_free(wait, again)
            else:
                assert wait == again, (leaf.name, wait, again)
        for app_id in pending[1:]:
            behind = view.wait_of(app_id)
            seen[behind.code] += 1
            assert behind.code is WaitCode.BEHIND_APP
            ahead = listed.index(app_id)  # the apps held aside ahead of it included
            assert behind.text.startswith(
                f"behind {head.app_id}, the head of {leaf.name} ({ahead} app(s) ahead of it),"
                f" which waits: {wait.text}")


def play(seed: int, steps: int, budget: CycleBudget = UNBOUNDED) -> Counter:
    rnd = random.Random(seed)
    root = random_tree(rnd)
    sched = Scheduler(root, Resources(rnd.randint(4, 24), rnd.randint(8, 64) * 1024),
                      rnd.randint(1, 4), budget=budget)
    cluster = Cluster(root, sched)
    seen: Counter = Counter()
    for _ in range(steps):
        acts = sorted((random_action(rnd) for _ in range(rnd.randint(1, 4))),
                      key=lambda act: act[0] in ("submit", "burst"))  # others: stepped apps
        events = [ev for act in acts for ev in events_for(cluster, act)]
        NOW[0] = cluster.now
        out = cluster.step(events)
        launched = sum(1 for d in out if isinstance(d, LaunchDriver))
        check_waits(sched, budget.admit is not None and launched >= budget.admit, seen, out)
        assert room_figures(sched._room()) == room_figures(fresh_keeper_room(sched))
        queued = {leaf for leaf, pending in sched.books.pending.items() if len(pending)}
        assert set(sched.waiting) <= queued, "a wait kept for a queue with nothing queued"
    return seen


ROOM_FIGURES = ("admitted_in", "usage_cores", "floor_cores_in", "drivers_in", "whole_in",
                "unbounded_in", "ahead_in", "weight_share", "free", "uncommitted",
                "driver_slots_free", "host_free", "host_drivers")


def room_figures(room: Room) -> dict:
    return {f: getattr(room, f) for f in ROOM_FIGURES}


def fresh_keeper_room(sched: Scheduler) -> Room:
    """The room as a keeper that has seen nothing before builds it: the engine's keeper works
    out again only the leaves that moved since its last call (``engine/room/keeper.py``)."""
    return RoomKeeper().room(sched.books, sched.capacity, sched.driver_slots, sched.host_room,
                             sched.reports, sched.elsewhere, sched.offered_later,
                             sched._weight_shares, sched.max_cores_left)


@pytest.mark.parametrize("seed", range(40), ids=[f"history {s}" for s in range(40)])
def test_every_waiting_app_has_the_first_failing_check_and_true_numbers(seed):
    play(seed, 150)


@pytest.mark.parametrize("seed", range(5), ids=[f"sliced history {s}" for s in range(5)])
def test_a_sliced_admission_says_so_and_only_then(seed):
    play(1000 + seed, 150, CycleBudget(admit=1, events=None))


def test_the_histories_reach_the_codes_of_every_check():
    """Not a vacuous test: over a few histories every code admission gives is seen."""
    seen: Counter = Counter()
    for seed in range(10):
        seen += play(seed, 150)
    given = {WaitCode.PARENT_QUEUE_FULL, WaitCode.QUEUE_LIMIT, WaitCode.STARTING_LIMIT,
             WaitCode.DRIVER_SLOT, WaitCode.DRIVER_SHARE, WaitCode.DRIVER_ROOM,
             WaitCode.EXECUTOR_ROOM, WaitCode.QUEUE_MAX_CORES, WaitCode.RUNNING_DEMAND,
             WaitCode.BEHIND_APP}
    assert given <= set(seen), f"never seen: {sorted(given - set(seen))}; seen {dict(seen)}"
