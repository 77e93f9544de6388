"""``carry_out``: one step's decisions on a backend (the memory cluster), in the order that
gives back before it takes, with every failed launch reported and none raised."""

from sessionsched.backends.base import Launch
from sessionsched.backends.carry import LaunchRetry, Retries, carry_out
from sessionsched.backends.memory import LAUNCH_FAILURES, WORK, MemoryBackend, MemoryCluster
from sessionsched.engine.events import LaunchDriver, SetTarget, StopDriver
from sessionsched.model import Resources


def python_app(d: LaunchDriver) -> Launch:
    return Launch(d.app_id, d.app_id, argv=("job.py",), log_path=f"/logs/{d.app_id}.log")


def one_slot_cluster() -> tuple[MemoryCluster, MemoryBackend]:
    cluster = MemoryCluster(Resources(4, 4096), driver_slots=1)
    return cluster, MemoryBackend(cluster)


def test_a_stop_frees_the_slot_a_launch_of_the_same_step_takes():
    cluster, backend = one_slot_cluster()
    carry_out([LaunchDriver("old")], backend, python_app)
    # The engine killed "old" and admitted "new" into its driver slot in one step; the
    # decisions list the launch first.
    carried = carry_out([LaunchDriver("new"), StopDriver("old")], backend, python_app)
    assert carried.failed == []
    assert [(a, h.app_id, path) for a, h, path in carried.launched] == [
        ("new", "new", "/logs/new.log")]
    assert cluster.apps["old"].exit_code == 143


def test_failed_launches_are_reported_not_raised():
    _, backend = one_slot_cluster()

    def launch_for(d: LaunchDriver) -> Launch | None:
        app_id = d.app_id
        if app_id == "session":
            return None  # a notebook starts its own driver
        if app_id == "broken":
            raise ValueError("app file gone\nsecond line")
        return Launch(app_id, app_id) if app_id == "empty" else python_app(d)

    decisions = [LaunchDriver(a) for a in ("session", "broken", "empty", "ok", "no-slot")]
    carried = carry_out(decisions, backend, launch_for)
    assert [a for a, _, _ in carried.launched] == ["ok"]
    assert carried.failed == [
        ("broken", "app file gone"),
        ("empty", "empty: nothing to launch (no spark-submit arguments, no REST request)"),
        ("no-slot", "no-slot: all 1 driver slots are in use"),
    ]


def test_grants_reach_the_drivers_through_steer():
    cluster, backend = one_slot_cluster()
    four_tasks = Launch("a", "a", argv=("job.py",), conf={WORK: "4x1"})
    carry_out([LaunchDriver("a"), SetTarget("a", 2, 1)], backend, lambda _: four_tasks)
    backend.poll(1.0)  # driver up at 0.5, wants 4 one-core executors: the grant lets one start
    assert cluster.apps["a"].grant == 1
    assert cluster.apps["a"].demand() == 4
    assert len(cluster.apps["a"].starting) + len(cluster.apps["a"].executors) == 1


def test_a_transient_launch_failure_is_tried_again_with_back_off_then_given_up():
    """The master cannot be reached (``launchFailures``): tried again after 1, 2, 4, 8, 16 s,
    the sixth failure ends it; a permanent refusal fails at once, never waits."""
    cluster, backend = one_slot_cluster()
    retries = Retries(LaunchRetry(first_s=1, factor=2, max_s=30, attempts=6))
    unreachable = Launch("a", "a", argv=("job.py",), conf={LAUNCH_FAILURES: "99"})
    broken = Launch("b", "b", argv=("job.py",), conf={WORK: "soon"})
    apps = {"a": unreachable, "b": broken}

    def launch_for(d: LaunchDriver) -> Launch | None:
        return apps.get(d.app_id)

    now, waits = 0.0, []
    carried = carry_out([LaunchDriver("a"), LaunchDriver("b")], backend, launch_for, retries, now)
    assert [a for a, _ in carried.failed] == ["b"] and "b" not in retries
    while carried.retrying:
        (app_id, why), = carried.retrying
        assert app_id == "a" and "cannot be reached" in why
        due_at = next(t for t in range(int(now) + 1, 100) if retries.due(float(t)))
        assert retries.due(due_at - 0.5) == []  # not before its time
        waits.append(due_at - now)
        now = float(due_at)
        carried = carry_out(retries.due(now), backend, launch_for, retries, now)
    assert waits == [1, 2, 4, 8, 16]
    (app_id, why), = carried.failed
    assert app_id == "a" and why.endswith("(gave up after 6 attempts)")
    assert "a" not in retries and "a" not in cluster.apps
