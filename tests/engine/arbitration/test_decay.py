"""Decayed fair share (``arbitration.decay``): the formula, the book that keeps it, the
water-fill that levels (cores + past) / weight, sharing by user in a fairshare leaf, and the
engine ordering and dividing by it (held to the from-scratch oracle by ``check()``)."""

import math

import pytest

from sessionsched.engine import DemandChanged, DriverExited, ExecutorsChanged
from sessionsched.engine.arbitration import Claim, DecayBook, Decayed, water_fill
from sessionsched.engine.arbitration.users import by_user, divide_leaf
from sessionsched.model import Policy, Resources
from tests.engine.engine_builders import Run, app, executors, leaf, tree

H = 3600.0


@pytest.mark.parametrize("state, now, expected", [
    (Decayed(10.0, 0.0, 4.0), 0.0, 10.0),
    (Decayed(8.0, 0.0, 0.0), H, 4.0),  # idle one half-life: half is left
    (Decayed(0.0, 0.0, 8.0), H, 4.0),  # busy from nothing: half way to its usage
    (Decayed(0.0, 0.0, 8.0), 2 * H, 6.0),  # 8 x (1 - 1/4)
    (Decayed(2.0, 100.0, 2.0), 100.0 + 7 * H, 2.0),  # steady: stays at its usage
    (Decayed(0.0, 0.0, 8.0), 50 * H, 8.0),  # busy for long: its usage
], ids=["no time passed", "idle one half-life", "busy one half-life", "busy two half-lives",
        "steady usage", "busy for long"])
def test_the_formula(state, now, expected):
    assert state.at(now, H) == pytest.approx(expected, abs=1e-9)


def test_the_book_composes_stretches_and_keeps_only_changes():
    book = DecayBook()
    book.set_tree(tree(leaf("a"), usage_half_life_s=H))
    book.observe(0.0, {"root": 8.0, "root.a": 8.0})
    assert book.changed() == [(("queue", "root", ""), Decayed(0.0, 0.0, 8.0)),
                              (("queue", "root.a", ""), Decayed(0.0, 0.0, 8.0))]
    book.observe(H / 2, {"root": 8.0, "root.a": 8.0})  # same usage: nothing rewritten
    assert book.changed() == []
    book.observe(H, {"root": 0.0, "root.a": 0.0})  # 8 cores for one half-life -> 4
    assert book.read(H).queues == pytest.approx({"root": 4.0, "root.a": 4.0})
    assert book.read(2 * H).queues == pytest.approx({"root": 2.0, "root.a": 2.0})
    assert [k for k, _ in book.changed()] == [("queue", "root", ""), ("queue", "root.a", "")]
    # Idle long enough, an entry is forgotten (and the store told: None).
    assert book.read(20 * H).queues == {}
    assert book.changed() == [(("queue", "root", ""), None), (("queue", "root.a", ""), None)]


def test_a_book_without_half_life_is_off():
    book = DecayBook()
    book.set_tree(tree(leaf("a")))
    assert not book.on and book.user_leaves == frozenset()


@pytest.mark.parametrize("args, expected", [
    ((16, [1, 1], [0, 0], [16, 16], [0, 8]), [12, 4]),  # (12+0) = (4+8)
    ((16, [1, 1], [0, 0], [16, 16], [0, 20]), [16, 0]),  # past beyond the total
    ((16, [1, 1], [0, 0], [5, 16], [0, 8]), [5, 11]),  # clamped to its want
    ((16, [1, 1], [0, 6], [16, 16], [0, 16]), [10, 6]),  # its guarantee kept
    ((16, [1, 3], [0, 0], [16, 16], [0, 0]), [4, 12]),  # no past: by weight
    ((16, [1, 3], [0, 0], [16, 16], [0, 8]), [6, 10]),  # (6+0)/1 = (10+8)/3
    ((16, [1, 1], [0, 0], [16, 16], None), [8, 8]),  # no past given
], ids=["past halves the busy one", "past beyond the total", "clamped to want",
        "guarantee kept", "weights without past", "weights and past", "past None"])
def test_water_fill_levels_cores_plus_past_over_weight(args, expected):
    assert water_fill(*args) == pytest.approx(expected)


def _claims(*users_wants, cores=1, priority=5000):
    """(user, n apps, want each) -> claims in rank order."""
    out, seq = [], 0
    for user, n, want in users_wants:
        for _ in range(n):
            seq += 1
            out.append(Claim(f"{user}{seq:02d}", "root.q", priority, seq,
                             Resources(cores, 1024), 0, want, user=user))
    return out


def _per_user(result, claims):
    got: dict[str, int] = {}
    for c in claims:
        got[c.user] = got.get(c.user, 0) + result[c.app_id] * c.executor.cores
    return got


@pytest.mark.parametrize("claims, cores, past, expected", [
    (_claims(("ann", 20, 16), ("bob", 1, 16)), 16, {}, {"ann": 8, "bob": 8}),
    (_claims(("ann", 20, 16), ("bob", 1, 2)), 16, {}, {"ann": 14, "bob": 2}),  # bob's want
    (_claims(("ann", 1, 16), ("bob", 1, 16)), 16, {"ann": 8.0}, {"ann": 4, "bob": 12}),
    (_claims(("ann", 3, 4), ("bob", 2, 4), cores=2), 13, {}, {"ann": 6, "bob": 6}),  # 1 left
    (_claims(("ann", 2, 4), ("bob", 1, 4), ("cy", 1, 4)), 9, {}, {"ann": 3, "bob": 3, "cy": 3}),
], ids=["20 apps and 1: half each", "a user's want caps it", "a user's past counts",
        "executors of 2: the odd core unused", "three users"])
def test_a_decaying_fairshare_leaf_shares_by_user(claims, cores, past, expected):
    result = by_user(cores, claims, past)
    assert _per_user(result, claims) == expected
    assert all(c.floor <= result[c.app_id] <= c.want for c in claims)


def test_users_only_in_fairshare_leaves_and_only_when_asked():
    claims = _claims(("ann", 3, 4), ("bob", 1, 4))
    per_app = divide_leaf(Policy.FAIRSHARE, 8, claims, None)
    assert _per_user(per_app, claims) == {"ann": 6, "bob": 2}  # by app: 2 each
    assert _per_user(divide_leaf(Policy.FAIRSHARE, 8, claims, {}), claims) == {"ann": 4,
                                                                             "bob": 4}
    fifo = divide_leaf(Policy.FIFO, 8, claims, {})
    assert _per_user(fifo, claims) == {"ann": 8, "bob": 0}  # fifo stays fifo


# --- the engine -------------------------------------------------------------------------------


def _teams(half_life):
    return tree(leaf("a"), leaf("b"), **({"usage_half_life_s": half_life} if half_life else {}))


def _b_busy_then_a(half_life, busy_s):
    """B's app holds all 8 cores for ``busy_s``; then A's app arrives wanting 8 too."""
    run = Run(_teams(half_life), cores=8)
    b = app("b1").queue("b")
    run.submit(b, at=0.0)
    run.step(ExecutorsChanged("b1", executors("b1", 8)), DemandChanged("b1", 8), at=1.0)
    a = app("a1").queue("a")
    run.submit(a, at=busy_s)
    run.step(DemandChanged("a1", 8), at=busy_s + 1)
    return run


def test_decay_off_splits_evenly():
    run = _b_busy_then_a(None, 10 * H)
    assert run.sched.apps["a1"].target == run.sched.apps["b1"].target == 4
    assert run.sched.check() == []


def test_decay_on_gives_the_idle_team_more_until_the_gap_closes():
    run = _b_busy_then_a(H, 10 * H)
    # B's decayed usage ~9 cores (8 executors + its driver), A's ~0: a gap over the 8 cores.
    assert (run.sched.apps["a1"].target, run.sched.apps["b1"].target) == (8, 0)
    assert run.sched.check() == []
    t = 10 * H + 1
    seen = []
    for _ in range(40):  # 6 minutes apart, 4 H in all: the gap halves every H / 2
        t += H / 10
        ta, tb = run.sched.apps["a1"].target, run.sched.apps["b1"].target
        run.step(ExecutorsChanged("a1", executors("a1", ta)),
                 ExecutorsChanged("b1", executors("b1", tb)), at=t)
        assert run.sched.check() == []
        seen.append(run.sched.apps["a1"].target)
    assert seen == sorted(seen, reverse=True), seen  # A's part only shrinks
    assert seen[-1] == 4  # and ends at an even split
    assert seen[0] > 4


def test_decay_orders_admission_by_usage_plus_past():
    # One driver slot left: without decay B's older head goes first (equal usage, rank), with
    # decay A's (B's past usage counts).
    for half_life, first in ((None, "b2"), (H, "a1")):
        run = Run(_teams(half_life), cores=8, slots=1)
        run.submit(app("b1").queue("b"), at=0.0)
        run.step(ExecutorsChanged("b1", executors("b1", 8)), DemandChanged("b1", 8), at=1.0)
        run.step(DriverExited("b1", 0), at=10 * H)  # B's work ended; its past stays
        b2, a1 = app("b2").queue("b"), app("a1").queue("a")
        out = run.submit(b2, a1, at=10 * H + 1)
        launched = [d.app_id for d in out if type(d).__name__ == "LaunchDriver"]
        assert launched == [first], half_life


def test_a_restored_book_gives_the_same_past():
    run = _b_busy_then_a(H, 3 * H)
    stored = run.sched.decayed()
    again = Run(_teams(H), cores=8)
    again.sched.load_decayed(stored)
    t = 3 * H + 100
    assert again.sched.books.decay.read(t) == run.sched.books.decay.read(t)
    assert math.isclose(run.sched.books.decay.read(t).queues["root.b"],
                        Decayed(0.0, 1.0, 9.0).at(3 * H, H), rel_tol=0.2)


def test_a_users_entry_is_apart_from_its_queues_even_for_a_nameless_user():
    book = DecayBook()
    book.set_tree(tree(leaf("a"), usage_half_life_s=H))
    book.refresh_app("x", "root.a", "", 4)  # 4 executor cores; the queue also counts a driver
    book.observe(0.0, {"root": 5.0, "root.a": 5.0})
    past = book.read(H)
    assert past.queues == pytest.approx({"root": 2.5, "root.a": 2.5})
    assert past.users == {"root.a": pytest.approx({"": 2.0})}


def test_the_view_shows_decayed_usage_and_follows_it_without_news():
    run = _b_busy_then_a(H, 3 * H)
    first = run.sched.view().usage
    run.step(at=4 * H)  # no events: only time passed
    later = run.sched.view().usage
    assert first["root.b"].decayed_cores < later["root.b"].decayed_cores  # still busy: grows
    assert set(later["root.b"].decayed_users) == {""}  # b1's user (the builder's: nameless)
    off = _b_busy_then_a(None, 3 * H).sched.view().usage["root.b"]
    assert (off.decayed_cores, off.decayed_users) == (None, None)
