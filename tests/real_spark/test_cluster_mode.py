"""JVM drivers in cluster deploy mode on the real cluster: a REST CreateSubmissionRequest
forwarded to the master's REST server (as sessionsched's Spark REST endpoint receives it from
spark-submit), and a ``submit`` app run through real ``spark-submit --deploy-mode cluster``.
Both are followed through the master's driver state; a fresh backend adopts them. A create
whose answer is lost is sent again or adopted, never run twice."""

from __future__ import annotations

import time

import pytest

from sessionsched.backends.base import BackendError, Handle, Launch
from sessionsched.backends.carry import Retries, carry_out
from sessionsched.engine.events import DriverExited, DriverStarted, ExecutorsChanged, LaunchDriver
from sessionsched.model import Resources
from tests.real_spark.answer_proxy import AnswerProxy
from tests.real_spark.backend_helpers import Seen, exited, make_backend, poll_until
from tests.sparkcluster import SMALL, conf_args, free_port, wait_idle, wait_until

pytestmark = pytest.mark.cluster

ONE_CORE = {**SMALL, "spark.cores.max": "1"}


def create_request(jar, name: str, *app_args: str) -> dict:
    """What spark-submit sends to sessionsched: spark.master names sessionsched (port 6066)."""
    return {
        "action": "CreateSubmissionRequest",
        "appArgs": list(app_args),
        "appResource": f"file:{jar}",
        "clientSparkVersion": "4.0.1",
        "environmentVariables": {"SPARK_LOCAL_IP": "127.0.0.1"},
        "mainClass": "SleepApp",
        "sparkProperties": {"spark.app.name": name, "spark.master": "spark://127.0.0.1:6066",
                            "spark.submit.deployMode": "cluster", "spark.jars": f"file:{jar}",
                            "spark.driver.supervise": "false", **ONE_CORE},
    }


def test_cluster_mode_drivers(spark_cluster, jvm_app_jar, tmp_path):
    wait_idle(spark_cluster)
    run_dir = tmp_path / "run"
    backend = make_backend(spark_cluster, run_dir)
    rest = Launch("driver-rest", "jvm-long", in_cluster=True, conf={"spark.app.name": "jvm-long"},
                  rest_request=create_request(jvm_app_jar, "jvm", "600000", "2", "0"))
    submit = Launch("driver-submit", "jvm-ok", in_cluster=True, conf={**ONE_CORE},
                    argv=("--class", "SleepApp", *conf_args({"spark.app.name": "jvm-ok"}),
                          str(jvm_app_jar), "1000", "2", "0"))
    try:
        rest_handle = backend.launch(rest)
        submit_handle = backend.launch(submit)
        assert rest_handle.kind == "cluster-driver" and rest_handle.ref.startswith("driver-")
        seen = poll_until(
            backend, Seen(),
            lambda s: s.exit_code("driver-submit") is not None and s.max_executors("driver-rest"),
            240, "the submitted app to end and the REST app to get an executor")
        backend.stop("driver-rest")
        poll_until(backend, seen, exited("driver-rest"), 60, "the killed driver's exit")
        view = backend.client.read()
    finally:
        for app_id in ("driver-rest", "driver-submit"):
            backend.stop(app_id)
        backend.close()

    assert seen.exit_code("driver-submit") == 0  # FINISHED
    assert seen.exit_code("driver-rest") == 143  # KILLED through the master's REST server
    assert view.master.driver(rest_handle.ref).state == "KILLED"
    apps = {a.id: a.name for a in view.master.active_apps + view.master.completed_apps}
    for app_id, name in (("driver-rest", "jvm-long"), ("driver-submit", "jvm-ok")):
        # the driver registered with the real master (not with 6066), under its own app id
        assert apps.get(seen.spark_app_id(app_id)) == name
        started = seen.first(app_id, DriverStarted)
        executor = seen.first(app_id, ExecutorsChanged, lambda e: len(e.executors) >= 1)
        assert started[0] < executor[0] < seen.first(app_id, DriverExited)[0]
    # Drivers of ours in the cluster are the engine's to count, not taken off the capacity.
    assert {c.capacity for c in seen.capacities()} == {Resources(4, 4096)}, seen.timeline()

    # A scheduler restart: a fresh backend adopts both and reports how they ended.
    fresh = make_backend(spark_cluster, run_dir)
    try:
        assert fresh.adopt(rest_handle) and fresh.adopt(submit_handle)
        assert not fresh.adopt(Handle("driver-x", "cluster-driver", "driver-20000101000000-9999"))
        again = poll_until(fresh, Seen(), exited("driver-rest", "driver-submit"), 30,
                           "the adopted drivers' exits")
        assert (again.exit_code("driver-rest"), again.exit_code("driver-submit")) == (143, 0)
    finally:
        fresh.close()


def test_a_refused_rest_submission_is_a_backend_error(spark_cluster, tmp_path):
    backend = make_backend(spark_cluster, tmp_path / "run")
    request = {"action": "CreateSubmissionRequest", "appArgs": [], "appResource": "file:/x.jar",
               "clientSparkVersion": "4.0.1", "environmentVariables": {},
               "sparkProperties": {"spark.app.name": "no-main-class"}}  # mainClass missing
    try:
        with pytest.raises(BackendError, match="refused the submission: .*Main class is missing"):
            backend.launch(Launch("driver-bad", "bad", rest_request=request, in_cluster=True))
        assert not (tmp_path / "run" / "driver-bad.json").exists()
    finally:
        backend.close()


def test_a_create_whose_answer_is_lost_is_adopted_or_sent_again_never_run_twice(
        spark_cluster, jvm_app_jar, tmp_path):
    """The master's REST server behind a proxy (``answer_proxy``) that loses the answers of
    the first two creates: the first never reaches the master (no driver of ours there: sent
    again, with back-off), the second does (the master runs the driver: found by the marker
    in its launch command and adopted, not sent a third time). The app runs once, to its
    end, through the server's own launch-and-retry code (``carry_out`` with ``Retries``)."""
    wait_idle(spark_cluster)
    with AnswerProxy(free_port(), spark_cluster.rest_url, ["drop", "withhold"]) as proxy:
        backend = make_backend(spark_cluster, tmp_path / "run", rest_url=proxy.url,
                               write_timeout_s=2.0)
        launch = Launch("driver-lost", "jvm-lost", in_cluster=True,
                        conf={"spark.app.name": "jvm-lost"},
                        rest_request=create_request(jvm_app_jar, "jvm-lost", "500", "1", "0"))
        retries, carried = Retries(), []
        try:
            def launched() -> bool:
                now = time.time()
                due = [LaunchDriver("driver-lost")] if not carried else retries.due(now)
                carried.append(carry_out(due, backend, lambda _app: launch, retries, now))
                return bool(carried[-1].launched or carried[-1].failed)

            wait_until(launched, 120, "the launch to be made or given up")
            seen = poll_until(backend, Seen(), exited("driver-lost"), 180, "the driver's exit")
            view = backend.client.read()
        finally:
            backend.stop("driver-lost")
            backend.close()
    tries = [why for c in carried for _, why in c.retrying]
    assert carried[-1].failed == [] and len(tries) in (1, 2), tries
    assert "the master runs no driver of driver-lost; attempt 1 of 6" in tries[0]
    # (a second retry only if the driver was not on a worker yet when first looked for)
    assert proxy.forwarded_creates == 1 and proxy.seen_creates == 2
    handle = carried[-1].launched[0][1]
    ours = [d for d in view.master.drivers if d.main_class == "SleepApp"
            and d.start_ms >= (handle.started_at - 5) * 1000]
    assert [d.id for d in ours] == [handle.ref]  # one driver, the one adopted
    assert seen.exit_code("driver-lost") == 0 and seen.spark_app_id("driver-lost")
