"""The standalone backend's parts that need no Spark: command lines, the cluster's JSON,
log matching, process identity, the runner, errors for bad input or no master, and the clock
it is given (on a fake master's JSON)."""

from __future__ import annotations

import contextlib
import http.server
import json
import signal
import subprocess
import sys
import threading
import time

import pytest

from sessionsched.backends import procs, recognize
from sessionsched.backends.applog import LogTail, find_app_id, find_driver_id
from sessionsched.backends.base import BackendError, Handle, Launch, Placement
from sessionsched.backends.clusterview import (
    ClusterView,
    ExecutorInfo,
    capacity_for_managed,
    parse_master,
    parse_worker_executors,
    presumed_ours,
    workers_of,
)
from sessionsched.backends.commands import redacted, rest_request, submit_command
from sessionsched.backends.driver_files import DriverRecord
from sessionsched.backends.standalone import RUNNER, StandaloneBackend
from sessionsched.backends.standalone.adopted import AdoptedApp
from sessionsched.engine.events import DriverExited
from sessionsched.model import Resources, Worker
from tests.sparkcluster import free_port, wait_until

# --- spark-submit command lines ---------------------------------------------------------


def _cmd(user_argv, conf, defaults=None):
    return submit_command("spark-submit", "spark://m:7077", "client", user_argv, conf,
                          defaults or {})


@pytest.mark.parametrize(
    "user_argv, conf, defaults, expected",
    [
        pytest.param(
            ["--conf", "spark.executor.memory=1g", "app.py", "--conf", "x=1"],
            {"spark.executor.memory": "2g"}, {},
            ["--conf", "spark.executor.memory=2g", "app.py", "--conf", "x=1"],
            id="ours beat the user's --conf; app args untouched even if they look like options",
        ),
        pytest.param(
            ["--executor-memory", "1g", "--name", "mine", "app.py"],
            {"spark.executor.memory": "1g", "spark.app.name": "queued-name"}, {},
            ["--conf", "spark.executor.memory=1g", "--conf", "spark.app.name=queued-name",
             "app.py"],
            id="a dedicated option for one of our keys is dropped (it would beat --conf)",
        ),
        pytest.param(
            ["--master", "yarn", "--deploy-mode", "cluster", "--py-files", "a.zip", "app.py"],
            {}, {},
            ["--py-files", "a.zip", "app.py"],
            id="--master and --deploy-mode are always ours",
        ),
        pytest.param(
            ["--conf", "spark.driver.host=10.0.0.5", "app.py"], {},
            {"spark.driver.host": "127.0.0.1", "spark.x": "1"},
            ["--conf", "spark.x=1", "--conf", "spark.driver.host=10.0.0.5", "app.py"],
            id="defaults only where nobody set the key",
        ),
    ],
)
def test_submit_command_precedence(user_argv, conf, defaults, expected):
    cmd = _cmd(user_argv, conf, defaults)
    assert cmd[:5] == ["spark-submit", "--master", "spark://m:7077", "--deploy-mode", "client"]
    assert cmd[5:] == expected


@pytest.mark.parametrize(
    "user_argv, message",
    [
        (["--conf", "spark.x=1"], "no application file"),
        (["--bogus", "app.py"], "unknown spark-submit option '--bogus'"),
        (["--conf"], "needs a value"),
    ],
    ids=["no app file", "unknown option", "option without value"],
)
def test_submit_command_refuses_unusable_arguments(user_argv, message):
    with pytest.raises(ValueError, match=message):
        _cmd(user_argv, {})


def test_the_logged_command_hides_secrets_like_spark_does():
    cmd = ["spark-submit", "--conf", "spark.authenticate.secret=s3", "--conf", "spark.a=1",
           "app.py", "--token=abc"]
    assert redacted(cmd) == ["spark-submit", "--conf", "spark.authenticate.secret=*********"
                             "(redacted)", "--conf", "spark.a=1", "app.py", "--token=abc"]


def test_rest_request_points_the_driver_at_the_real_master():
    original = {"action": "CreateSubmissionRequest", "mainClass": "A",
                "sparkProperties": {"spark.master": "spark://127.0.0.1:6066", "spark.a": "1"},
                "environmentVariables": {"SPARK_X": "1"}}
    body = rest_request(original, "spark://127.0.0.1:7077", {"spark.a": "2"}, {"E": "v"})
    assert body["sparkProperties"] == {"spark.master": "spark://127.0.0.1:7077", "spark.a": "2"}
    assert body["environmentVariables"] == {"SPARK_X": "1", "E": "v"}
    assert original["sparkProperties"]["spark.master"] == "spark://127.0.0.1:6066"  # unchanged
    with pytest.raises(ValueError, match="not a CreateSubmissionRequest"):
        rest_request({"action": "KillSubmissionRequest"}, "spark://m:1", {}, {})


# --- the cluster's JSON -----------------------------------------------------------------


def _worker(wid, cores, memory, state="ALIVE"):
    return {"id": wid, "host": "127.0.0.1", "port": 1, "webuiaddress": f"http://{wid}",
            "cores": cores, "coresused": 0, "memory": memory, "memoryused": 0, "state": state}


def _app(aid, cores, start_s=1):
    return {"id": aid, "name": aid, "user": "u", "state": "RUNNING", "cores": cores,
            "memoryperexecutor": 512, "starttime": int(start_s * 1000)}


def _driver(did, state, cores=1, memory=1024, start_s=1):
    return {"id": did, "state": state, "cores": cores, "memory": memory, "worker": "w1",
            "starttime": str(int(start_s * 1000))}


def _view(workers, apps, drivers=(), executors=()):
    master = parse_master({"url": "spark://m:1", "status": "ALIVE", "workers": list(workers),
                           "activeapps": list(apps), "activedrivers": list(drivers)})
    return ClusterView(master, tuple(ExecutorInfo(a, e, 512, "w1") for a, e in executors))


@pytest.mark.parametrize(
    "view, managed_apps, managed_drivers, expected",
    [
        pytest.param(_view([_worker("w1", 8, 8192), _worker("w2", 4, 4096, "DEAD")], []),
                     (), (), Resources(8, 8192), id="only alive workers count"),
        # foreign app: 2 cores, two 512 MiB executors -> 8-2 cores, 8192-1024 MiB
        pytest.param(_view([_worker("w1", 8, 8192)], [_app("app-1", 2)],
                           executors=[("app-1", "0"), ("app-1", "1")]),
                     (), (), Resources(6, 7168), id="an unmanaged app's cores and executors"),
        pytest.param(_view([_worker("w1", 8, 8192)], [_app("app-1", 2)],
                           executors=[("app-1", "0"), ("app-1", "1")]),
                     ("app-1",), (), Resources(8, 8192), id="a managed app is not subtracted"),
        # a foreign running driver holds 1 core/1024 MiB; a finished one nothing; ours nothing
        pytest.param(_view([_worker("w1", 8, 8192)], [],
                           drivers=[_driver("d-1", "RUNNING"), _driver("d-2", "FINISHED"),
                                    _driver("d-3", "RUNNING")]),
                     (), ("d-3",), Resources(7, 7168), id="unmanaged cluster-mode drivers"),
        pytest.param(_view([_worker("w1", 1, 512)], [_app("app-1", 4)]),
                     (), (), Resources(0, 512), id="never below zero"),
    ],
)
def test_capacity_for_managed(view, managed_apps, managed_drivers, expected):
    assert capacity_for_managed(view, managed_apps, managed_drivers) == expected


def test_workers_of_names_the_alive_workers_with_what_is_free_on_each():
    busy = {**_worker("w1", 4, 8192), "coresused": 3, "memoryused": 2048}
    view = _view([busy, _worker("w2", 2, 2048), _worker("w3", 8, 8192, "DEAD")], [])
    assert workers_of(view) == (Worker("w1", Resources(4, 8192), Resources(1, 6144)),
                                Worker("w2", Resources(2, 2048), Resources(2, 2048)))


_APPS = [_app("app-old", 1, start_s=50), _app("app-a", 1, start_s=100),
         _app("app-b", 1, start_s=101), _app("app-mine", 1, start_s=102)]
_DRIVERS = [_driver("d-done", "FINISHED", start_s=100), _driver("d-x", "RUNNING", start_s=100),
            _driver("d-y", "RUNNING", start_s=103)]


@pytest.mark.parametrize(
    "apps_launched_at, drivers_launched_at, expected",
    [
        pytest.param([], [], (set(), set()), id="nothing unidentified: nothing presumed"),
        pytest.param([99.5], [], ({"app-a"}, set()),
                     id="one driver: the earliest unclaimed app started after its launch"),
        pytest.param([100.5, 99.0], [], ({"app-a", "app-b"}, set()),
                     id="one app per driver, from the earliest launch (1 s slack)"),
        pytest.param([200.0], [], (set(), set()), id="apps older than the launch never"),
        pytest.param([], [101.0, 102.5], (set(), {"d-x", "d-y"}),
                     id="running cluster drivers of submissions whose driver id is unknown"),
        pytest.param([], [102.5], (set(), {"d-y"}), id="an ended driver is never presumed"),
    ],
)
def test_presumed_ours(apps_launched_at, drivers_launched_at, expected):
    view = _view([_worker("w1", 8, 8192)], _APPS, _DRIVERS)
    assert presumed_ours(view, {"app-mine"}, set(), apps_launched_at,
                         drivers_launched_at) == expected


def test_cluster_json_that_is_not_sparks_is_refused_with_the_field_named():
    with pytest.raises(ValueError, match="'url' missing"):
        parse_master({"workers": []})
    with pytest.raises(ValueError, match="'cores' is not a number"):
        parse_master({"url": "spark://m:1", "workers": [_worker("w1", "many", 1)]})
    with pytest.raises(ValueError, match="'appid' missing"):
        parse_worker_executors({"executors": [{"id": 1, "memory": 512}]}, "w1")


def test_driver_states_become_exit_codes():
    master = parse_master({"url": "spark://m:1", "activedrivers": [_driver("a", "RUNNING")],
                           "completeddrivers": [_driver("b", "FINISHED"),
                                                _driver("c", "FAILED"), _driver("d", "KILLED")]})
    assert [master.driver(d).exit_code for d in "abcd"] == [None, 0, 1, 143]


# --- logs -------------------------------------------------------------------------------


def test_ids_are_found_in_driver_and_submitter_logs():
    line = ("26/11/21 17:46:28 INFO StandaloneSchedulerBackend: Connected to Spark cluster "
            "with app ID app-20261121174628-0000")
    assert find_app_id(line) == "app-20261121174628-0000"
    assert find_app_id("Connected to Spark cluster with app ID later") is None
    sub = "INFO RestSubmissionClient: Submission successfully created as driver-20261121-0001."
    assert find_driver_id(sub) == "driver-20261121-0001"


def test_log_tail_reads_only_whole_new_lines(tmp_path):
    log = tmp_path / "driver.log"
    tail = LogTail(log)
    tail.scan()  # no file yet: nothing, no error
    assert tail.app_id is None
    log.write_text("start\nConnected to Spark cluster with app ID app-1-")
    tail.scan()
    assert tail.app_id is None  # the line is still being written
    with open(log, "a") as f:
        f.write("0002\n")
    tail.scan()
    assert tail.app_id == "app-1-0002"


# --- processes and the runner -----------------------------------------------------------


def _run_runner(tmp_path, *command, **kwargs):
    exit_file = tmp_path / "x.exit"
    popen = subprocess.Popen([sys.executable, RUNNER, "--exit-file", str(exit_file), "--",
                              *command], start_new_session=True, **kwargs)
    return popen, exit_file


@pytest.mark.parametrize(
    "command, code",
    [
        ([sys.executable, "-c", "import sys; sys.exit(3)"], 3),
        ([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"], 137),
        (["/nonexistent/spark-submit"], 127),
    ],
    ids=["exit code", "killed by a signal", "cannot start"],
)
def test_runner_records_the_exit_code(tmp_path, command, code):
    popen, exit_file = _run_runner(tmp_path, *command, stderr=subprocess.DEVNULL)
    assert popen.wait(timeout=30) == code
    assert exit_file.read_text().strip() == str(code)
    assert not (tmp_path / "x.exit.tmp").exists()


def test_sigterm_to_the_group_is_recorded_as_143_and_empties_it(tmp_path):
    popen, exit_file = _run_runner(tmp_path, sys.executable, "-c", "import time; time.sleep(60)")
    proc = procs.identify(popen.pid)
    wait_until(lambda: len(_group(proc.pid)) >= 2, 10, "the runner's child")
    procs.stop_group(proc, grace_s=10)  # it also collects the runner's status (our child)
    popen.wait(timeout=10)
    assert exit_file.read_text().strip() == "143"
    assert not procs.group_alive(proc.pid)


def _group(pgid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "-g", str(pgid)], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def test_a_process_is_known_by_pid_and_start_time():
    popen = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        me = procs.identify(popen.pid)
        assert procs.is_running(me)
        assert procs.ProcessId.parse(str(me)) == me
        stranger = procs.ProcessId(me.pid, me.start_ticks + 1)  # same PID, another process
        assert not procs.is_running(stranger)
        assert not procs.signal_group(stranger, signal.SIGTERM)  # a stranger is never signalled
        assert popen.poll() is None
    finally:
        popen.kill()
        popen.wait(timeout=10)
    assert not procs.is_running(me)


# --- errors a user sees -----------------------------------------------------------------


def test_an_unreachable_master_is_a_clear_backend_error(tmp_path):
    port = free_port()
    backend = StandaloneBackend(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{port}",
                                tmp_path, http_timeout_s=1.0)
    try:
        started = time.monotonic()
        for call in (backend.capacity, lambda: backend.poll(0.0)):
            with pytest.raises(BackendError,
                               match=rf"cannot reach the Spark master at http://127.0.0.1:{port}"
                                     r"/json/: connection refused"):
                call()
        assert time.monotonic() - started < 5
    finally:
        backend.close()


@pytest.mark.parametrize(
    "launch, message",
    [
        (Launch("driver-1", "a"), "nothing to launch"),
        (Launch("driver-1", "a", argv=("--conf", "spark.x=1")), "no application file"),
        (Launch("driver-1", "a", rest_request={"action": "Nope"}, in_cluster=True),
         "not a CreateSubmissionRequest"),
    ],
    ids=["no arguments", "no application file", "not a REST create request"],
)
def test_a_launch_that_cannot_work_is_refused_with_the_reason(tmp_path, launch, message):
    backend = StandaloneBackend("spark://127.0.0.1:1", "http://127.0.0.1:1", tmp_path)
    try:
        with pytest.raises(BackendError, match=message):
            backend.launch(launch)
        assert not list(tmp_path.glob("*.json"))  # nothing recorded for a refused launch
    finally:
        backend.close()


def test_a_bad_master_url_is_refused(tmp_path):
    with pytest.raises(ValueError, match="expected spark://HOST:PORT"):
        StandaloneBackend("127.0.0.1:7077", "http://127.0.0.1:8080", tmp_path)


# --- finding our driver after a lost create answer (recognize) ----------------------------

SENT = 1_000_000.0  # when the create was sent
MINE = 'Launch Command: "java" "-Dspark.sessionsched.appId=driver-a" "DriverWrapper" "Main"'


def _lost(drivers, logs):
    """recognize.find for app driver-a (main class Main, sent at SENT) over these drivers,
    with ``logs`` (driver id -> the head of its stderr) as the workers would serve them."""
    listed = [{**_driver(d, state, start_s=at), "mainclass": main,
               "worker": "w1" if placed else "None"} for d, state, at, main, placed in drivers]
    master = parse_master({"url": "spark://m:1", "activedrivers":
                           [d for d in listed if d["state"] in ("SUBMITTED", "RUNNING")],
                           "completeddrivers":
                           [d for d in listed if d["state"] not in ("SUBMITTED", "RUNNING")]})
    return recognize.find(ClusterView(master, ()), "driver-a", "Main", SENT, {"d-known"},
                          lambda _view, did: logs.get(did, ""))


@pytest.mark.parametrize("drivers, logs, expected", [
    pytest.param([("d-1", "RUNNING", SENT + 1, "Main", True)], {"d-1": "==== Bytes\n" + MINE},
                 "d-1", id="its launch command has our marker: ours"),
    pytest.param([("d-1", "FINISHED", SENT + 1, "Main", True)], {"d-1": MINE},
                 "d-1", id="already ended: ours all the same (its exit is the master's)"),
    pytest.param([], {}, recognize.NOT_FOUND, id="no driver: the create did not run"),
    pytest.param([("d-1", "RUNNING", SENT + 1, "Main", True)],
                 {"d-1": MINE.replace("driver-a", "driver-a0")}, recognize.NOT_FOUND,
                 id="another app's marker (an id that starts like ours)"),
    pytest.param([("d-1", "RUNNING", SENT + 1, "Other", False),
                   ("d-2", "RUNNING", SENT - 600, "Main", False),
                   ("d-known", "RUNNING", SENT + 1, "Main", True)], {}, recognize.NOT_FOUND,
                 id="other main class, started long before, or known: not looked at"),
    pytest.param([("d-1", "SUBMITTED", SENT + 1, "Main", False)], {}, recognize.UNSURE,
                 id="waiting for a worker: no log yet"),
    pytest.param([("d-1", "ERROR", SENT + 1, "Main", False)], {}, recognize.NOT_FOUND,
                 id="ended without ever running"),
    pytest.param([("d-1", "RUNNING", SENT + 1, "Main", True)], {"d-1": ""}, recognize.UNSURE,
                 id="its log cannot be read now"),
])
def test_a_driver_is_ours_by_the_marker_in_its_launch_command(drivers, logs, expected):
    assert _lost(drivers, logs) == expected


# --- time: the backend's clock is the one it is given -------------------------------------


@contextlib.contextmanager
def _fake_master(document: dict):
    """A master whose ``/json/`` answers ``document`` as it is at each request."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server name
            body = json.dumps(document).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_driver_the_master_stops_listing_ends_after_its_wait_on_the_given_clock(tmp_path):
    """A cluster driver the master no longer lists is gone (-1, with the reason) once
    DRIVER_MISSING_S (30 s) have passed since its launch on the clock ``poll`` is given, and
    the worker it ran on is its placement meanwhile; the wall clock plays no part (the clock
    here is 1,000,000 s in the past)."""
    worker = {**_worker("w1", 4, 4096), "webuiaddress": "http://127.0.0.1:1"}  # no answer
    document = {"url": "spark://m:1", "status": "ALIVE", "workers": [worker], "activeapps": [],
                "activedrivers": [_driver("driver-1", "RUNNING")]}
    with _fake_master(document) as address:
        backend = StandaloneBackend(f"spark://{address}", f"http://{address}", tmp_path,
                                    clock=lambda: SENT)
        try:
            assert backend.adopt(Handle("a", "cluster-driver", "driver-1", SENT))
            backend.poll(SENT + 1)
            assert backend.placement("a") == Placement("w1", "127.0.0.1:1")
            document["activedrivers"] = []
            assert [e for e in backend.poll(SENT + 29) if isinstance(e, DriverExited)] == []
            exited = [e for e in backend.poll(SENT + 31) if isinstance(e, DriverExited)]
            assert [(e.app_id, e.exit_code) for e in exited] == [("a", -1)]
            assert "no longer lists driver driver-1" in exited[0].reason
        finally:
            backend.close()


def test_an_adopted_apps_executors_are_reported_each_on_its_worker():
    """The workers' lists name each executor's worker: reclaim for an executor short of a GPU
    takes executors on the GPU workers (engine/reclaim.py)."""
    master = parse_master({"url": "spark://m:1", "status": "ALIVE",
                           "workers": [_worker("w1", 8, 8192), _worker("w2", 8, 8192)],
                           "activeapps": [_app("app-1", 2)]})
    view = ClusterView(master, (ExecutorInfo("app-1", "1", 512, "w2"),
                                ExecutorInfo("app-1", "0", 512, "w1")))
    part = AdoptedApp(DriverRecord("a", "external", 0.0, spark_app_id="app-1"))
    (changed,) = part.observe(view, now=5.0)
    assert [(e.executor_id, e.worker) for e in changed.executors] == [("0", "w1"), ("1", "w2")]
    assert part.observe(view, now=6.0) == []  # the same executors: reported once
