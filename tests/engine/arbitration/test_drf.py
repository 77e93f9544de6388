"""Weighted dominant-resource fair share (``arbitration.drf``): tables of named cases with
their numbers, and the incremental arbiter held to the from-scratch targets over random
histories on a cluster with GPUs."""

import random

import pytest

from sessionsched.engine.arbitration import Arbiter, Claim, Past, compute_targets, drf
from sessionsched.model import Resources
from tests.engine.engine_builders import leaf, next_claim, parent, tree

GPU = (("gpu", 1),)
CLUSTER = Resources(32, 32 * 4096, (("gpu", 4),))  # 32 cores, 128 GiB, 4 GPUs


def _claim(app_id, queue="root.fair", *, gpus=0, cores=2, want=100, floor=0, prio=5000,
           seq=None, user=""):
    custom = (("gpu", gpus),) if gpus else ()
    return Claim(app_id, queue, prio, seq if seq is not None else int(app_id[-1]),
                 Resources(cores, cores * 2048, custom), floor, want, user=user)


def _both(root, capacity, claims, past=None):
    """The targets from scratch, checked against the incremental arbiter's."""
    arbiter = Arbiter()
    for c in claims:
        arbiter.set_claim(c)
    kw = {} if past is None else {"past": past}
    arbiter.compute(root, capacity, **kw)
    fresh = compute_targets(root, capacity, claims, **kw)
    assert arbiter.targets == fresh
    return fresh


ONE_LEAF = tree(leaf("fair", policy="fairshare"))
TWO_LEAVES = tree(leaf("gpu", policy="fairshare"), leaf("cpu", policy="fairshare"))

# (name, queue tree, claims, expected targets). Executors of 2 cores/4 GiB, GPU ones with 1
# GPU: one GPU executor is a dominant share of 1/4 (1 of 4 GPUs), a CPU one 1/16 (2 of 32).
CASES = [
    # Levelled: x GPU executors, y CPU ones with x/4 = y/16 and 2x + 2y = 32 cores: x = 3.2,
    # y = 12.8; rounded down 3 and 12, the 2 cores left to the one further behind (the CPU
    # app: 13/16 < 4/4): dominant shares 3/4 and 13/16.
    ("a GPU app and a CPU app in one leaf reach equal dominant shares", ONE_LEAF,
     [_claim("gpu1", gpus=1), _claim("cpu2")], {"gpu1": 3, "cpu2": 13}),
    # Cores-only fairshare would give each 16 cores: the GPU app can use 8 (its 4 GPUs), and
    # 8 cores would sit granted and idle.
    ("two GPU apps split the GPUs, the CPU app takes the cores they leave", ONE_LEAF,
     [_claim("gpu1", gpus=1), _claim("gpu2", gpus=1), _claim("cpu3")],
     {"gpu1": 2, "gpu2": 2, "cpu3": 12}),
    ("a GPU app alone gets every GPU it can use and no more", ONE_LEAF,
     [_claim("gpu1", gpus=1)], {"gpu1": 4}),
    # Twice the priority for the CPU app: (x/4)/1 = (y/16)/2 and 2x + 2y = 32: x = 16/9,
    # y = 128/9; rounded 1 and 14, the 2 cores left to the CPU app ((15/16)/2 < (2/4)/1).
    ("priority weighs the dominant share", ONE_LEAF,
     [_claim("gpu1", gpus=1), _claim("cpu2", prio=10000)], {"gpu1": 1, "cpu2": 15}),
    ("between queues: the GPU queue and the CPU queue level their dominant shares",
     TWO_LEAVES, [_claim("gpu1", "root.gpu", gpus=1), _claim("cpu2", "root.cpu")],
     {"gpu1": 4, "cpu2": 12}),
    ("between queues: the GPUs are shared by the queues that want them", TWO_LEAVES,
     [_claim("gpu1", "root.gpu", gpus=1), _claim("gpu2", "root.cpu", gpus=1),
      _claim("cpu3", "root.cpu")], {"gpu1": 2, "gpu2": 2, "cpu3": 12}),
    ("floors come first, whatever the dominant share", ONE_LEAF,
     [_claim("gpu1", gpus=1, floor=4), _claim("cpu2", floor=2)], {"gpu1": 4, "cpu2": 12}),
]


@pytest.mark.parametrize(("root", "claims", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_dominant_share_cases(root, claims, expected):
    assert _both(root, CLUSTER, claims) == expected


def test_no_custom_resource_divides_cores_as_before():
    """On a cluster without custom resources nothing changes: the same as cores-only."""
    claims = [_claim("cpu1"), _claim("cpu2", cores=1, prio=9000)]
    plain = Resources(32, 32 * 4096)
    drf.DOMINANT = False
    try:
        before = compute_targets(ONE_LEAF, plain, claims)
    finally:
        drf.DOMINANT = True
    assert _both(ONE_LEAF, plain, claims) == before


def test_apps_asking_no_custom_resource_divide_as_before_on_a_gpu_cluster():
    claims = [_claim("cpu1"), _claim("cpu2", cores=1, prio=9000), _claim("cpu3", want=3)]
    drf.DOMINANT = False
    try:
        before = compute_targets(ONE_LEAF, CLUSTER, claims)
    finally:
        drf.DOMINANT = True
    assert _both(ONE_LEAF, CLUSTER, claims) == before


def test_progressive_filling_stops_the_parties_of_the_resource_that_runs_out():
    # 32 cores, 4 GPUs: party 0 uses 1 GPU per 2 cores, party 1 none. At equal weights the
    # GPUs run out at 8 cores for party 0; party 1 goes on to the 24 cores left.
    shares = drf.fill(32.0, [1.0, 1.0], [0.0, 0.0], [100.0, 100.0], [0.0, 0.0],
                      [{"gpu": 0.5}, {}], {"gpu": 4.0})
    assert shares == pytest.approx([8.0, 24.0])


ROOT = tree(
    parent("a", leaf("fair", policy="fairshare"), leaf("prio", policy="priority")),
    parent("b", leaf("fair", policy="fairshare", max_resources=(("gpu", 3),)),
           leaf("fair2", policy="fairshare", min_resources=(("gpu", 1),), weight=2)),
)
LEAVES = ["root.a.fair", "root.a.prio", "root.b.fair", "root.b.fair2"]


@pytest.mark.parametrize("seed", range(200), ids=[f"gpu history {s}" for s in range(200)])
def test_gpu_histories_match_the_targets_from_scratch(seed):
    rnd = random.Random(seed)
    arbiter = Arbiter()
    claims: dict[str, Claim] = {}
    seq = 0
    cores, gpus = rnd.randint(4, 60), rnd.randint(1, 8)
    for _ in range(40):
        for _ in range(rnd.randint(0, 4)):
            picked, seq = next_claim(rnd, claims, arbiter, LEAVES, seq)
            if picked is None:
                continue
            app_id, s, queue = picked
            want = rnd.randint(0, 8)
            custom = (("gpu", rnd.choice((1, 2))),) if rnd.random() < 0.4 else ()
            c = Claim(app_id, queue, rnd.choice((1, 5000, 9000)), s,
                      Resources(rnd.choice((1, 2, 4)), 1024 * rnd.choice((1, 4)), custom),
                      rnd.randint(0, min(want, 1)), want, user=rnd.choice("xy"))
            claims[app_id] = c
            arbiter.set_claim(c)
        if rnd.random() < 0.4:
            cores = max(cores + rnd.randint(-10, 10), 0)
        if rnd.random() < 0.2:
            gpus = rnd.randint(0, 8)
        capacity = Resources(cores, 1 << 30, (("gpu", gpus),) if gpus else ())
        # now and then the cluster's totals are more than the capacity (apps it does not
        # manage hold the rest), moving alone: each leaf's dominant shares move with them
        totals = (None if rnd.random() < 0.7 else
                  Resources(cores + rnd.randint(0, 20), 1 << 30, (("gpu", gpus + 4),)))
        before = dict(arbiter.targets)
        moved = arbiter.compute(ROOT, capacity, totals=totals)
        fresh = compute_targets(ROOT, capacity, list(claims.values()), totals=totals)
        assert arbiter.targets == fresh
        assert set(moved) == {a for a, n in fresh.items() if before.get(a) != n}
        # No more GPUs granted than there are, in every policy's leaves, where the floors fit
        # them and root.b.fair's cap (floors come first: where they do not, they are all that
        # is given out; admission keeps such apps out, ``never_fits``).
        def gpu_floors(leaf=None):
            return sum(c.floor * dict(c.executor.custom).get("gpu", 0) for c in claims.values()
                       if leaf is None or c.queue == leaf)

        used = sum(n * dict(claims[a].executor.custom).get("gpu", 0) for a, n in fresh.items())
        if gpus and gpu_floors() <= gpus and gpu_floors("root.b.fair") <= 3:
            assert used <= gpus


CAPPED = tree(leaf("gpu", policy="fairshare", max_resources=(("gpu", 2),)),
              leaf("cpu", policy="fairshare"))
GUARANTEED = tree(leaf("mixed", policy="fairshare"),
                  leaf("gpu", policy="fairshare", min_resources=(("gpu", 3),)))
FIFO_CAPPED = tree(leaf("gpu", policy="fifo", max_resources=(("gpu", 1),)),
                   leaf("cpu", policy="fairshare"))

# (name, queue tree, claims, expected targets): ``max_resources`` and ``min_resources``.
CAP_CASES = [
    ("max_resources caps the queue's GPUs; the cores go to the other queue", CAPPED,
     [_claim("gpu1", "root.gpu", gpus=1), _claim("cpu2", "root.cpu")],
     {"gpu1": 2, "cpu2": 14}),
    ("max_resources holds for every app of the queue together", CAPPED,
     [_claim("gpu1", "root.gpu", gpus=1), _claim("gpu2", "root.gpu", gpus=1)],
     {"gpu1": 1, "gpu2": 1}),
    ("max_resources holds in a fifo leaf too", FIFO_CAPPED,
     [_claim("gpu1", "root.gpu", gpus=1, want=4), _claim("cpu2", "root.cpu")],
     {"gpu1": 1, "cpu2": 15}),
    # Without the guarantee the two queues' GPU apps would split the GPUs 2 and 2.
    ("min_resources guarantees the queue its GPUs first", GUARANTEED,
     [_claim("gpu1", "root.mixed", gpus=1), _claim("cpu2", "root.mixed"),
      _claim("gpu3", "root.gpu", gpus=1)], {"gpu1": 1, "cpu2": 12, "gpu3": 3}),
]


@pytest.mark.parametrize(("root", "claims", "expected"), [c[1:] for c in CAP_CASES],
                         ids=[c[0] for c in CAP_CASES])
def test_caps_and_guarantees_on_custom_resources(root, claims, expected):
    assert _both(root, CLUSTER, claims) == expected


def test_users_of_a_decaying_leaf_level_their_dominant_shares():
    # Users x (a GPU app) and y (two CPU apps), no past usage: levelled as the apps of the
    # first case, x at 6.4 cores and y at 25.6, rounded to 3 GPU executors and 12 CPU ones;
    # the 2 cores left over by the users' rounding go in rank order (gpu1 first).
    claims = [_claim("gpu1", gpus=1, user="x"), _claim("cpu2", user="y"),
              _claim("cpu3", user="y")]
    got = _both(ONE_LEAF, CLUSTER, claims, Past(users={"root.fair": {}}))
    assert got == {"gpu1": 4, "cpu2": 6, "cpu3": 6}
    # x's past usage (decayed, 16 cores) counts at x's ratio: (x + 16) x 4 levelled with y
    # leaves x nothing while y wants all 32 cores.
    later = _both(ONE_LEAF, CLUSTER, claims, Past(users={"root.fair": {"x": 16.0}}))
    assert later == {"gpu1": 0, "cpu2": 8, "cpu3": 8}
