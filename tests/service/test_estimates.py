"""Estimated starts and counter-offers (docs/design/estimates.md), on the service stepped by hand
on the memory cluster (``stepped_service``): the estimator is run by the test (``refresh()``, in
process), as the server's background job runs it every ``server.estimate_s`` (in a process of
its own there: tests/commands/test_cli_estimates.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from datetime import datetime, timezone

from sessionsched.backends.memory import WORK
from tests.support.stepped_service import Clock, stepped_service

DYN = "spark.dynamicAllocation"


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def test_a_queue_of_equal_apps_gets_increasing_estimates_refreshed_as_apps_start(stepped):
    with stepped(policy="fifo", max_running_apps=1) as s:
        ids = [s.submit(f"equal-{i}", **{WORK: "4x20", f"{DYN}.maxExecutors": "4"})
               for i in range(5)]
        s.until(ids[0], "RUNNING")
        queued = [s.app(i) for i in ids[1:]]
        assert [(a["state"], a["estimated_start"]) for a in queued] == [("ACCEPTED", None)] * 4

        s.service.estimator.refresh(force=True)
        queued = [s.app(i) for i in ids[1:]]
        starts = [epoch(a["estimated_start"]) for a in queued]
        assert [a["position"] for a in queued] == [1, 2, 3, 4]
        assert s.clock.now <= starts[0] < starts[1] < starts[2] < starts[3], starts
        assert s.app(ids[0])["estimated_start"] is None  # launched: nothing to estimate
        first_estimate = s.service.view.estimated_at

        s.until(ids[1], "STARTING", cycles=300)
        s.service.estimator.refresh(force=True)
        assert s.service.view.estimated_at > first_estimate
        assert s.app(ids[1])["estimated_start"] is None
        later = [epoch(s.app(i)["estimated_start"]) for i in ids[2:]]
        assert s.clock.now <= later[0] < later[1] < later[2], later


def test_the_estimate_assumes_the_last_runs_of_the_same_name(stepped):
    with stepped(policy="fifo") as s:
        done = s.until(s.submit("nightly", **{WORK: "30"}), "FINISHED", cycles=200)
        ran = done["finished_at"] and epoch(done["finished_at"]) - epoch(done["started_at"])
        assert s.service.store.run_lengths(["nightly", "unknown"]) == {
            "nightly": [ran]}
        # Now one runs and one waits (the cluster's cores are the running one's): the wait is
        # what the first one has left of its earlier run's length, not the 600 s default.
        big = {WORK: "4x30", f"{DYN}.minExecutors": "4", f"{DYN}.maxExecutors": "4"}
        running = s.submit("nightly", **big)
        s.until_true(lambda: s.app(running)["executors"] == 4, "the first one's executors")
        waiting = s.submit("nightly", **big)
        s.cycle()
        assert s.app(waiting)["state"] == "ACCEPTED"
        s.service.estimator.refresh(force=True)
        wait = epoch(s.app(waiting)["estimated_start"]) - s.clock.now
        assert 0 < wait < ran + 30, (wait, ran)


def test_an_elastic_app_that_waits_for_its_first_executors_gets_a_counter_offer(stepped):
    with stepped(policy="fifo") as s:
        # 2 of the 4 cores held by a long app as its floor; the next asks minExecutors=3: its
        # floor has no room beside (``reserve_room``) until the long one ends (the default
        # 600 s), while with 2 it could start now.
        long = s.submit("long", **{WORK: "2x1000", f"{DYN}.minExecutors": "2",
                                   f"{DYN}.maxExecutors": "2"})
        s.until_true(lambda: s.app(long)["executors"] == 2, "the long app's 2 executors")
        elastic = s.submit("elastic", **{f"{DYN}.minExecutors": "3",
                                         f"{DYN}.maxExecutors": "8"})
        fixed = s.submit("fixed", **{f"{DYN}.minExecutors": "3", f"{DYN}.maxExecutors": "3"})
        s.cycle()
        assert s.app(elastic)["state"] == "ACCEPTED"
        s.service.estimator.refresh(force=True)
        app = s.app(elastic)
        offer = app["counter_offer"]
        assert offer is not None, app
        assert (offer["executors"], offer["instead_of"]) == (2, 3)
        start, sooner = epoch(app["estimated_start"]), epoch(offer["estimated_start"])
        assert sooner - s.clock.now < 30 < start - s.clock.now  # now, against minutes
        assert "with 3 executors; start now with 2" in offer["text"]
        assert s.app(fixed)["counter_offer"] is None  # not elastic: maxExecutors = min

        # The same on the other doors.
        spark = s.client.get(f"/v1/submissions/status/{elastic}").json()
        assert (spark["estimatedStart"], spark["counterOffer"]) == (
            app["estimated_start"], offer["text"])
        batches = s.client.get("/batches").json()["sessions"]
        info = next(b for b in batches if b["submissionId"] == elastic)["appInfo"]
        assert (info["estimatedStart"], info["counterOffer"]) == (
            app["estimated_start"], offer["text"])
        assert "counter_offer" in s.client.get("/static/apps.js").text  # the dashboard's


def test_the_estimating_process_starts_without_a_first_import():
    """The server's estimating process (a one-worker pool of the ``spawn`` context) is started
    on the scheduler's thread at the first refresh with an app queued. Every module that
    start needs comes with the refresher's own import, so it changes ``sys.modules`` under
    no other thread of the server (a hypothesis run iterating it once failed so). In a
    fresh interpreter: the refresher imported, then such a pool started and used."""
    script = textwrap.dedent("""
        import multiprocessing, sys
        from concurrent.futures import ProcessPoolExecutor
        import sessionsched.service.estimating.refresher
        before = set(sys.modules)
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            assert pool.submit(abs, -1).result(timeout=120) == 1
        print(sorted(set(sys.modules) - before))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"imported at the pool's start: {done.stdout}"


def test_a_running_apps_stages_against_its_names_earlier_runs_set_the_wait(stepped):
    """Its name's earlier run took 10 s, then 60 s; today its first stage took 40 s. Once in
    its second stage it has about 60 s left (the stages' rule), not its run's length less what
    it has worked (about 30 s less)."""
    from sessionsched.model.stages import DoneStage
    from sessionsched.store.work_lengths import stage_runs
    sized = {f"{DYN}.minExecutors": "4", f"{DYN}.maxExecutors": "4"}
    with stepped(policy="fifo") as s:
        s.until(s.submit("etl", **{WORK: "4x10,4x60"}, **sized), "FINISHED", cycles=400)
        assert stage_runs(s.service.store, ["etl"]) == {
            "etl": [(DoneStage(4, 10.0), DoneStage(4, 60.0))]}

        today = s.submit("etl", **{WORK: "4x40,4x60"}, **sized)
        book = s.service.estimator.progress
        s.until_true(lambda: (p := book.snapshot([today]).get(today)) and len(p.done) == 1,
                     "its second stage", cycles=400)
        waiting = s.submit("etl", **sized)
        s.cycle()
        assert s.app(waiting)["state"] == "ACCEPTED"
        s.service.estimator.refresh(force=True)
        wait = epoch(s.app(waiting)["estimated_start"]) - s.clock.now
        assert 45 < wait < 65, wait


def test_the_estimate_fires_the_plans_to_come(state_dir, cluster, tmp_path):
    """One app at a time in ``root.default``, the first assumed to work for ten hours (no
    earlier run of its name: the default run length); the config's plan lets two run an hour
    from now: the second's estimated start is then, not ten hours away."""
    clock = Clock()
    clock.now = float(int(time.time()))  # the plans' own scheduler runs on the wall clock
    at = datetime.fromtimestamp(clock.now + 3600, timezone.utc).isoformat()
    plans = [{"at": at, "queues": {"default": {"max_running_apps": 2}}}]
    queues = [{"name": "root", "queues": [{"name": "default", "policy": "fifo",
                                           "max_running_apps": 1}]}]
    with stepped_service(state_dir, cluster, tmp_path, clock, queues, plans=plans,
                         server={"estimate_default_run_s": 36000}) as s:
        first = s.submit("long", **{WORK: "4x36000"})
        s.until(first, "RUNNING")
        second = s.submit("next", **{WORK: "30"})
        s.cycle()
        s.service.estimator.refresh(force=True)
        after_the_plan = epoch(s.app(second)["estimated_start"]) - epoch(at)
        assert 0 <= after_the_plan <= 10, after_the_plan
