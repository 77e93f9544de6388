"""Usage accounting in the service (``service/usage_meter``, ``operations/usage_read``), stepped
by hand on the memory cluster: the server counts from the executor reports it steps, the
memory cluster counts what really happened (``SparkApp.usage``, as Spark's status store
would); the two agree to the report's granularity (one cycle, ``STEP_S``). The figures reach
the API, the CLI's table, the Prometheus counters and one summary line per ended app, and a
restart counts on from what the store kept.
"""

from __future__ import annotations

import logging

import pytest

from sessionsched.backends.memory import WORK
from sessionsched.operations.usage_read import BadWhen, parse_when, window

STEP_S = 0.5  # cycle spacing: the server sees each change at most this late
# 4 tasks of 3 s on four 1-core executors, then one task of 6 s: three executors idle until
# the cluster's idle timeout (5 s) releases them while the last task runs.
WORKLOAD = "4x3,1x6"
TASK_WORK_S = 4 * 3 + 1 * 6


def usage(s, by="app", **params) -> list[dict]:
    r = s.client.get("/api/v1/usage", params={"by": by, **params})
    assert r.status_code == 200, r.text
    return r.json()


def of(lines: list[dict], app_id: str) -> dict:
    return next(line for line in lines if line.get("app") == app_id)


def truth(s, app_id: str) -> dict:
    sa = s.cluster.apps[app_id]
    return sa.usage.at(sa.ended_at or s.cluster.now).figures()


def test_the_server_counts_what_the_cluster_did_to_one_report(stepped, caplog):
    caplog.set_level(logging.INFO, logger="sessionsched.usage")
    with stepped() as s:
        app_id = s.submit("u1", **{WORK: WORKLOAD})
        s.until(app_id, "FINISHED", step_s=STEP_S)
        got, real = of(usage(s), app_id), truth(s, app_id)
    assert real["busy_core_s"] == TASK_WORK_S  # the cluster's own count: the tasks' work
    assert real["idle_core_s"] >= 3 * 5  # three executors idle through the idle timeout
    for kind in ("held_core_s", "busy_core_s", "idle_core_s", "driver_core_s"):
        # each level change is seen at most one cycle late, on up to 4 cores
        assert got[kind] == pytest.approx(real[kind], abs=4 * STEP_S), kind
    assert got["held_core_s"] == pytest.approx(got["busy_core_s"] + got["idle_core_s"])
    assert got["held_gib_s"] == pytest.approx(got["held_core_s"])  # 1 core, 1 GiB executors
    assert got["reclaimed_core_s"] == 0 and got["reclaimed_executors"] == 0
    assert (got["queue"], got["state"], got["apps"]) == ("root.default", "FINISHED", 1)
    summaries = [r.getMessage() for r in caplog.records
                 if r.getMessage().startswith("SESSIONSCHED_APP_SUMMARY")]
    assert len(summaries) == 1
    assert f"appId={app_id} queue=root.default" in summaries[0]
    assert f"held_core_s={got['held_core_s']}" in summaries[0]


def test_queue_and_user_lines_add_up_the_apps_and_the_counters_agree(stepped):
    with stepped() as s:
        ids = [s.submit(f"u{i}", **{WORK: "2x2"}) for i in range(3)]
        for app_id in ids:
            s.until(app_id, "FINISHED", step_s=STEP_S)
        apps = usage(s)
        (queue,) = usage(s, "queue")
        (user,) = usage(s, "user")
        metrics = s.client.get("/metrics").text
    assert queue["apps"] == user["apps"] == 3
    for kind in ("held_core_s", "busy_core_s", "idle_core_s", "driver_core_s"):
        total = sum(of(apps, i)[kind] for i in ids)
        assert queue[kind] == pytest.approx(total) == user[kind]
        counted = [line for line in metrics.splitlines()
                   if line.startswith("sessionsched_app_usage_total{")
                   and f'kind="{kind}"' in line and 'queue="root.default"' in line]
        assert sum(float(line.rsplit(" ", 1)[1]) for line in counted) == pytest.approx(
            total, abs=0.01), kind


def test_a_window_picks_the_apps_that_lived_in_it(stepped):
    with stepped() as s:
        first = s.submit("early", **{WORK: "1x1"})
        s.until(first, "FINISHED", step_s=STEP_S)
        s.cycle(3600)
        second = s.submit("late", **{WORK: "1x1"})
        s.until(second, "FINISHED", step_s=STEP_S)
        recent = [line["app"] for line in usage(s, since="30m")]
        old = [line["app"] for line in usage(s, until="30m")]
        both = [line["app"] for line in usage(s, since="0")]
        bad = s.client.get("/api/v1/usage", params={"since": "last week"})
        inverted = s.client.get("/api/v1/usage", params={"since": "1d", "until": "7d"})
    assert (recent, old, both) == ([second], [first], [first, second])
    assert bad.status_code == 400
    assert bad.json()["detail"] == ("since 'last week' is not a time (like 7d, 12h, epoch "
                                    "seconds or ISO 8601)")
    assert inverted.status_code == 400  # it answered [], as if nothing had run
    assert inverted.json()["detail"] == ("until '7d' is not after since '1d': the window "
                                         "[since, until) holds no time")


def test_a_restart_counts_on_from_what_the_store_kept(stepped):
    with stepped() as s:
        app_id = s.submit("long", **{WORK: "4x20"})
        s.until(app_id, "RUNNING", step_s=STEP_S)
        s.until_true(lambda: s.app(app_id)["executors"] == 4, "4 executors", STEP_S)
        for _ in range(10):
            s.cycle(STEP_S)
        before = of(usage(s), app_id)
        (queue_before,) = usage(s, "queue")
    with stepped() as s:  # the same scheduler restarted: the cluster ran on meanwhile
        s.cycle()
        after = of(usage(s), app_id)
        (queue_after,) = usage(s, "queue")
        for line, was in ((after, before), (queue_after, queue_before)):
            assert line["held_core_s"] == pytest.approx(was["held_core_s"], abs=4 * STEP_S)
            assert line["busy_core_s"] >= was["busy_core_s"] > 0
        s.until(app_id, "FINISHED", step_s=STEP_S, cycles=200)
        got, real = of(usage(s), app_id), truth(s, app_id)
        (queue,) = usage(s, "queue")  # the hourly rollup: the same figures
    assert real["busy_core_s"] == 4 * 20
    for kind in ("held_core_s", "busy_core_s", "driver_core_s"):
        assert got[kind] == pytest.approx(real[kind], abs=4 * STEP_S), kind
        assert queue[kind] == pytest.approx(got[kind], abs=0.01), kind


def test_an_end_committed_without_its_usage_is_counted_once_after_a_restart(stepped):
    """The cycle commits an app's end; the meter writes its last figures and hours in a commit
    of its own, after. A kill -9 between the two (here the meter stopped first: it never
    writes) leaves the end without them: the next start counts them, and only once."""
    with stepped() as s:
        short, long_ = s.submit("short", **{WORK: "2x2"}), s.submit("long", **{WORK: "2x8"})
        s.until(short, "FINISHED", step_s=STEP_S)
        s.until_true(lambda: s.app(long_)["executors"] == 2, "2 executors", STEP_S)
        s.service.usage_thread.stop()
        s.until(long_, "FINISHED", step_s=STEP_S, cycles=200)
    for _ in range(2):  # a second restart finds nothing left to count
        with stepped() as s:
            s.cycle()
            apps = usage(s)
            (queue,) = usage(s, "queue")
        assert queue["apps"] == 2
        for kind in ("held_core_s", "busy_core_s", "driver_core_s", "queued_s"):
            total = sum(of(apps, i)[kind] for i in (short, long_))
            assert queue[kind] == pytest.approx(total, abs=0.01), kind
        assert of(apps, long_)["busy_core_s"] >= 2 * 8 - 4 * STEP_S


def test_a_queued_app_shows_its_wait_so_far_and_the_launch_fixes_it(stepped):
    with stepped(admission="none", max_running_apps=1) as s:
        first = s.submit("first", **{WORK: "1x10"})
        submitted = s.clock.now
        second = s.submit("second", **{WORK: "1x1"})
        s.cycle()
        s.cycle(4.0)
        waiting = of(usage(s), second)
        assert (waiting["state"], waiting["queued_s"]) == ("ACCEPTED", 4.0)
        s.until(first, "FINISHED", step_s=STEP_S)
        s.until(second, "STARTING", step_s=STEP_S)
        launched = s.clock.now  # the cycle that launched it was the last one run
        s.until(second, "FINISHED", step_s=STEP_S)
        ended = of(usage(s), second)
    assert launched - submitted > 10  # it waited for the first's 10 s task
    assert ended["queued_s"] == pytest.approx(launched - submitted)


def test_queue_and_user_lines_count_the_hours_inside_the_window(stepped):
    with stepped() as s:
        edge = s.clock.now - s.clock.now % 3600 + 3600  # the next hour starts here
        app_id = s.submit("long", **{WORK: "1x4000"})  # one 1-core task across the edge
        s.until_true(lambda: s.clock.now > edge + 600, "past the hour's edge", 100.0, 100)
        # while it runs: the live app's part since its last report counts too
        live = of(usage(s), app_id)
        (whole,) = usage(s, "queue")
        assert whole["held_core_s"] == pytest.approx(live["held_core_s"], abs=0.01)
        s.until(app_id, "FINISHED", step_s=100.0)
        app = of(usage(s), app_id)
        (whole,) = usage(s, "queue")
        (before,) = usage(s, "queue", until=str(edge))
        (after,) = usage(s, "user", since=str(edge))
        (inside,) = usage(s, "queue", since=str(edge - 1), until=str(edge))  # the hour before
    for kind in ("held_core_s", "busy_core_s", "driver_core_s", "queued_s"):
        assert whole[kind] == pytest.approx(app[kind], abs=0.01), kind
        assert before[kind] + after[kind] == pytest.approx(app[kind], abs=0.01), kind
        assert inside[kind] == before[kind], kind  # a window is whole hours
    # the task started within a few 100 s cycles of the submission, 800 s into the hour
    started = edge - 2800
    assert 3600 - 800 - 300 <= before["busy_core_s"] <= edge - started
    assert (before["apps"], after["apps"], whole["apps"]) == (1, 0, 1)  # submitted before


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e400", "last week"])
def test_a_time_that_is_no_time_is_refused_by_name(text):
    with pytest.raises(BadWhen, match=f"since '{text}' is not a time"):
        parse_when(text, 1_000_000.0, "since")


# A window that holds no time answered an empty list, as if nothing had run.
WINDOWS = [
    # name, since, until, the window or the refusal
    ("unset", None, None, (0.0, 1_000_000.0)),
    ("since only", "7d", None, (1_000_000.0 - 7 * 86400, 1_000_000.0)),
    ("until only", None, "10", (0.0, 10.0)),
    ("inverted", "1d", "7d", "until '7d' is not after since '1d': the window [since, until) "
                             "holds no time"),
    ("empty", "100", "100", "until '100' is not after since '100': the window [since, until) "
                            "holds no time"),
    ("since ahead of now", "2099-01-01", None, "until 'now' is not after since '2099-01-01': "
                                               "the window [since, until) holds no time"),
    ("until before 1970", None, "-5", "until '-5' is not after since '0': the window [since, "
                                      "until) holds no time"),
]


@pytest.mark.parametrize("since,until,expected", [w[1:] for w in WINDOWS],
                         ids=[w[0] for w in WINDOWS])
def test_a_window_that_holds_no_time_is_refused(since, until, expected):
    if isinstance(expected, str):
        with pytest.raises(BadWhen) as err:
            window(since, until, 1_000_000.0)
        assert str(err.value) == expected
    else:
        assert window(since, until, 1_000_000.0) == expected


def test_times_as_epoch_seconds_ago_and_iso():
    now = 1_000_000.0
    assert [parse_when(t, now, "since") for t in ("0", "7d", "1970-01-01T00:00:10Z")] == [
        0.0, now - 7 * 86400, 10.0]
