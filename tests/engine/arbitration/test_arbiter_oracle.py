"""The incremental arbiter (``arbitration.incremental.Arbiter``) against the independent
from-scratch oracle (``arbitration.oracle``) over random histories (hypothesis), as
``test_greedy`` holds the greedy leaves to the from-scratch policies one level down.

A history: random queue trees (policies, weights, ``min_share``, ``max_cores`` on leaves and
parents), then steps of claims set, changed or dropped (floors, wants, priorities, executor
sizes, guaranteed or not), capacity swinging in cores and memory (so floors get cut, memory
binds, leaves go from room for every want to short and back), and now and then a new tree.
After every step: the same targets, and ``compute`` reports exactly the apps whose target moved.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionsched.engine.arbitration import Arbiter, Claim, Past
from sessionsched.engine.arbitration.oracle import targets
from sessionsched.model import Policy, Queue, Resources

HISTORIES = settings(max_examples=200, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

leaf_settings = st.fixed_dictionaries({
    "policy": st.sampled_from(list(Policy)),
    "weight": st.sampled_from([1.0, 2.0, 3.0]),
    "min_share_cores": st.sampled_from([0, 0, 2, 6]),
    "max_cores": st.sampled_from([None, None, 3, 8]),
})
parent_settings = st.fixed_dictionaries({
    "weight": st.sampled_from([1.0, 2.0]),
    "min_share_cores": st.sampled_from([0, 4]),
    "max_cores": st.sampled_from([None, None, 6, 12]),
})


@st.composite
def trees(draw) -> Queue:
    """root.p0.l0, root.p0.l1, root.p1.l0, root.p1.l1 and root.p1.m.l2 (a third level): the
    same leaf names whatever the settings, so a history's claims stay in leaves when the tree
    changes."""
    def leaves(parent: str, n: int) -> tuple[Queue, ...]:
        return tuple(Queue(name=f"{parent}.l{j}", **draw(leaf_settings)) for j in range(n))

    middle = Queue(name="root.p1.m",
                   children=(Queue(name="root.p1.m.l2", **draw(leaf_settings)),),
                   **draw(parent_settings))
    return Queue(name="root", children=(
        Queue(name="root.p0", children=leaves("root.p0", 2), **draw(parent_settings)),
        Queue(name="root.p1", children=leaves("root.p1", 2) + (middle,),
              **draw(parent_settings)),
    ))


LEAVES = ["root.p0.l0", "root.p0.l1", "root.p1.l0", "root.p1.l1", "root.p1.m.l2"]

claim_changes = st.fixed_dictionaries({
    "app": st.integers(0, 11),
    "leaf": st.sampled_from(LEAVES),
    "priority": st.sampled_from([1, 5000, 5000, 9000]),
    "size": st.sampled_from([(1, 1024), (1, 1024), (2, 2048), (2, 4096), (4, 3072), (1, 0)]),
    "want": st.integers(0, 8),
    "floor": st.integers(0, 3),
    "guaranteed": st.booleans(),
})
steps = st.one_of(
    st.tuples(st.just("set"), claim_changes),
    st.tuples(st.just("drop"), st.integers(0, 11)),
    st.tuples(st.just("capacity"), st.tuples(st.integers(0, 40), st.sampled_from(
        [1 << 30, 1 << 30, 40 * 1024, 16 * 1024, 6 * 1024, 0]))),
    st.tuples(st.just("tree"), trees()),
)


@HISTORIES
@given(first=trees(), history=st.lists(st.lists(steps, max_size=6), min_size=1, max_size=25))
def test_the_incremental_arbiter_gives_the_oracles_targets(first, history):
    arbiter = Arbiter()
    claims: dict[str, Claim] = {}
    seqs: dict[str, tuple[int, str]] = {}  # an app keeps its seq and leaf, as in the engine
    root, capacity = first, Resources(20, 1 << 30)
    for batch in history:
        for kind, arg in batch:
            if kind == "set":
                app_id = f"app{arg['app']:02d}"
                seq, leaf = seqs.setdefault(app_id, (len(seqs), arg["leaf"]))
                cores, mem = arg["size"]
                c = Claim(app_id, leaf, arg["priority"], seq, Resources(cores, mem),
                          min(arg["floor"], arg["want"]), arg["want"], arg["guaranteed"])
                claims[app_id] = c
                arbiter.set_claim(c)
            elif kind == "drop":
                app_id = f"app{arg:02d}"
                claims.pop(app_id, None)
                arbiter.drop(app_id)
            elif kind == "capacity":
                capacity = Resources(*arg)
            else:
                root = arg
        before = dict(arbiter.targets)
        moved = arbiter.compute(root, capacity)
        fresh = targets(root, capacity, list(claims.values()))
        assert arbiter.targets == fresh
        assert set(moved) == {a for a, n in fresh.items() if before.get(a) != n}


def test_the_oracle_is_the_arbitration_packages_from_scratch_form():
    from sessionsched.engine.arbitration import compute_targets

    assert compute_targets is targets


# Decayed fair share (``arbitration.decay``): the same histories with past usage per queue and
# per user changing between cycles, some fairshare leaves sharing by user.
past_steps = st.tuples(
    st.just("past"),
    st.tuples(
        st.dictionaries(st.sampled_from(["root.p0", "root.p1", "root.p1.m", *LEAVES]),
                        st.sampled_from([0.0, 0.5, 3.0, 7.25, 20.0]), max_size=6),
        st.dictionaries(st.sampled_from(LEAVES),
                        st.dictionaries(st.sampled_from(["ann", "bob", "cy"]),
                                        st.sampled_from([0.0, 1.0, 4.5, 12.0]), max_size=3),
                        max_size=5),
    ),
)
decay_steps = st.one_of(steps, past_steps)


@HISTORIES
@given(first=trees(), history=st.lists(st.lists(decay_steps, max_size=6), min_size=1,
                                        max_size=25),
       users=st.lists(st.sampled_from(["ann", "bob", "cy"]), min_size=12, max_size=12))
def test_with_decayed_usage_the_incremental_arbiter_gives_the_oracles_targets(
        first, history, users):
    arbiter = Arbiter()
    claims: dict[str, Claim] = {}
    seqs: dict[str, tuple[int, str]] = {}
    root, capacity, past = first, Resources(20, 1 << 30), Past()
    for batch in history:
        for kind, arg in batch:
            if kind == "set":
                app_id = f"app{arg['app']:02d}"
                seq, leaf = seqs.setdefault(app_id, (len(seqs), arg["leaf"]))
                cores, mem = arg["size"]
                c = Claim(app_id, leaf, arg["priority"], seq, Resources(cores, mem),
                          min(arg["floor"], arg["want"]), arg["want"], arg["guaranteed"],
                          user=users[arg["app"]])
                claims[app_id] = c
                arbiter.set_claim(c)
            elif kind == "drop":
                app_id = f"app{arg:02d}"
                claims.pop(app_id, None)
                arbiter.drop(app_id)
            elif kind == "capacity":
                capacity = Resources(*arg)
            elif kind == "past":
                past = Past(*arg)
            else:
                root = arg
        before = dict(arbiter.targets)
        moved = arbiter.compute(root, capacity, past)
        fresh = targets(root, capacity, list(claims.values()), past)
        assert arbiter.targets == fresh
        assert set(moved) == {a for a, n in fresh.items() if before.get(a) != n}
