"""sessionsched against stock Spark on a real local standalone cluster, case by case, side by side.

    python benchmarks/real_cluster.py [--quick] [--out DIR] [--modes stateaware,reserve,...]
                                      [--cases burst,priority,notebook] [--ports 47000-47999]

Real parts only: one local standalone cluster from pyspark's Spark (1 worker of ``--cores``
1-core executors; the tasks sleep, so the worker may advertise more cores than the machine
has), ``sessionsched serve`` on it, real REST submissions, real spark-submit and PySpark
drivers. Everything runs on 127.0.0.1: the master, its REST server and web UI, the worker
(RPC and web UI) and the scheduler take ports in ``--ports``; drivers and executors take ports
the OS picks (their web UIs are off). Everything started here is stopped by PID on exit, also
on failure or Ctrl-C. The cluster's own view (the master's ``/json/``, read every 0.5 s) is
the measure for every system alike.

Cases (each system runs on the same idle cluster, one after the other):

1. **Driver burst**: ``--burst`` JVM apps (``SleepApp``: one 1-core executor, ``spark.cores.max``
   1, a few sleeping tasks) in cluster deploy mode, submitted at once through the REST
   protocol: to the stock master, and to sessionsched in one queue per admission mode of
   ``--modes`` (each mode's queue: ``policy: fifo``). Completed apps, makespan, and the
   core-seconds held by drivers whose app has no executor core. A run in which for
   ``--stall-s`` seconds no app completed and no executor core was granted is stalled: it is
   stopped there and reported so. Any run is stopped at ``--timeout-s`` (reported as
   unfinished). Either way its drivers are then killed.
2. **Priority under contention**: low-priority PySpark apps (priority 1000, dynamic allocation,
   each wanting twice the cluster) fill the cluster; once their executors are up on every
   core (registered with their drivers, not merely granted by the master, and none granted
   still starting), one high-priority app (10000, wanting half the cluster) is submitted. Its
   completion time (submission to end) with stock Spark's FIFO and through sessionsched queues
   with ``policy: priority`` and ``policy: fairshare`` (admission: the config default), as a
   ratio to its time alone on the idle cluster through the same system (the mean of one run
   before and one after the contended run). Goal: at most 1.2 x solo.
3. **Notebook share**: two dynamic-allocation PySpark apps under ``fairshare``, A at 5000 and B
   at 10000, both wanting far more than the cluster: the executor split over time (A 1/3, B
   2/3), then B lowered to 2500 (A 2/3, B 1/3). B comes once A's executors are up on every
   core; the priority changes once B's are up on its share. Time from B's submission, and
   from the priority change, until the master shows the new split and it has held for 3 s.

Output: tables on stdout, ``results.json`` and PNG plots (``burst.png``, ``priority.png``,
``notebook.png``) in ``--out``; logs of every process in a temporary directory it prints.
``--quick`` runs a smaller cluster and shorter apps (a few minutes): a check that the script
works, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
APP = ROOT / "examples" / "apps" / "sleep_tasks.py"
LOW, HIGH = 1000, 10000
SAMPLE_S = 0.5
SETTLE_S = 3.0  # a split counts as reached once it has held this long (not passing through)
# Properties of every app in every system: small executors, no web UIs, loopback, and a short
# idle timeout so an app that is done with its executors gives them back soon (stock and ours).
APP_CONF = {
    "spark.executor.cores": "1",
    "spark.executor.memory": "512m",
    "spark.driver.memory": "512m",
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.dynamicAllocation.executorIdleTimeout": "5s",
}
DYNAMIC = {"spark.dynamicAllocation.enabled": "true",
           "spark.dynamicAllocation.shuffleTracking.enabled": "true"}


@dataclass(frozen=True)
class Sizes:
    """How big each case is: the full run, or ``--quick``."""

    cores: int
    burst: int  # JVM apps in the burst: more than cores, so stock drivers can take every core
    burst_tasks: int
    burst_task_ms: int
    lows: int  # low-priority apps in the priority case
    task_s: float  # the priority case's task length
    notebook_task_s: float


FULL = Sizes(cores=6, burst=8, burst_tasks=4, burst_task_ms=3000, lows=3, task_s=20.0,
             notebook_task_s=60.0)
QUICK = Sizes(cores=3, burst=4, burst_tasks=2, burst_task_ms=1000, lows=2, task_s=8.0,
              notebook_task_s=30.0)


# --- watching the cluster -----------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    t: float
    running_drivers: int  # cluster-mode drivers RUNNING
    drivers_idle: int  # of those, drivers whose app holds no executor core
    executor_cores: int
    app_cores: dict[str, int]  # active app name -> executor cores granted
    ended_drivers: dict[str, str]  # driver id -> final state


class Watch:
    """The master's ``/json/`` every ``SAMPLE_S`` seconds, in a thread, as Samples."""

    def __init__(self, master_ui: str):
        from sessionsched.backends.master import MasterClient

        self.client = MasterClient(master_ui)
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from sessionsched.backends.base import BackendError

        while not self._stop.is_set():
            try:
                view = self.client.read_master()
            except BackendError:
                self._stop.wait(SAMPLE_S)
                continue
            running = [d for d in view.drivers if d.state == "RUNNING"]
            with_cores = sum(1 for a in view.active_apps if a.cores > 0)
            # Every app here comes from one driver (cluster mode) or a client-mode driver on
            # this host; a running cluster-mode driver whose app has no core holds its core idle.
            self.samples.append(Sample(
                t=time.time(), running_drivers=len(running),
                drivers_idle=max(0, sum(d.cores for d in running) - with_cores),
                executor_cores=sum(a.cores for a in view.active_apps),
                app_cores={a.name: a.cores for a in view.active_apps},
                ended_drivers={d.id: d.state for d in view.drivers if d.exit_code is not None}))
            self._stop.wait(SAMPLE_S)

    def last(self) -> Sample | None:
        return self.samples[-1] if self.samples else None

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.client.close()


def wait_for(cond: Callable[[], object], timeout_s: float, what: str, interval_s: float = 0.25):
    deadline = time.monotonic() + timeout_s
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(interval_s)


REGISTERED = "Successfully registered with driver"  # an executor's log line once it is up


def executors_up(cluster, app_names: set[str]) -> int:
    """Executors of the apps named ``app_names`` that are up: listed by their worker and
    registered with their driver (their log says so). The master counts an executor's core as
    granted when it asks the worker to launch it, but on this machine the executor's JVM may
    take 10-30 s more to come up and run a task: a case that means "the cluster is full of
    running work" waits for this, not for the master's grants."""
    from sessionsched.backends.base import BackendError
    from sessionsched.backends.master import MasterClient

    client = MasterClient(cluster.master_ui)
    try:
        view = client.read()
    except BackendError:
        return 0
    finally:
        client.close()
    ids = {a.id for a in view.master.active_apps if a.name in app_names}
    up = 0
    for e in view.executors:
        if e.spark_app_id not in ids:
            continue
        for log in cluster.directory.glob(f"worker-*/{e.spark_app_id}/{e.executor_id}/stderr"):
            if REGISTERED in log.read_text(errors="replace"):
                up += 1
    return up


def wait_idle(master_ui: str, timeout_s: float = 120) -> None:
    """Until the cluster runs no app and no driver: every case starts on an empty cluster."""
    from sessionsched.backends.base import BackendError
    from sessionsched.backends.master import MasterClient

    client = MasterClient(master_ui)

    def idle() -> bool:
        try:
            view = client.read_master()
        except BackendError:
            return False
        return not view.active_apps and all(d.exit_code is not None for d in view.drivers)

    try:
        wait_for(idle, timeout_s, "the cluster to be idle")
    finally:
        client.close()


# --- the stack: cluster + scheduler -------------------------------------------------------


def free_ports(first: int, last: int, n: int) -> list[int]:
    from sessionsched.backends.ports import free_port_in

    out: list[int] = []
    while len(out) < n:
        out.append(free_port_in(range(first, last + 1), set(out)))
    return out


def master_port(first: int, last: int) -> int:
    """A port whose next one is free too (the REST server is on the master's port + 1)."""
    from sessionsched.backends.ports import port_free

    for p in range(first, last):
        if port_free(p) and port_free(p + 1):
            return p
    raise RuntimeError(f"no two free ports in a row in {first}-{last}")


@dataclass
class Stack:
    cluster: object  # LocalCluster
    server: object  # ServerProcess
    api: object  # SchedulerClient

    @property
    def master_ui(self) -> str:
        return self.cluster.master_ui

    def stop(self) -> None:
        """Kill every live app of the scheduler (its drivers outlive it), then stop the
        scheduler and the cluster by PID."""
        try:
            for app in self.api.apps():
                if not app.state.terminal:
                    self.api.kill(app.id)
        except Exception as e:  # stopping goes on: the cluster's stop ends what is left
            print(f"  (could not kill the scheduler's apps: {e})", file=sys.stderr)
        self.api.close()
        self.server.stop()
        self.cluster.stop()


def queues(modes: list[str]) -> list[dict]:
    burst = [{"name": f"burst_{m}", "admission": m, "policy": "fifo"} for m in modes]
    return [{"name": "root", "queues": [
        *burst,
        {"name": "prio", "policy": "priority", "reclaim_timeout": 0},
        {"name": "fair", "policy": "fairshare", "reclaim_timeout": 0},
        {"name": "notebook", "policy": "fairshare", "reclaim_timeout": 0},
    ]}]


def start_stack(sizes: Sizes, modes: list[str], work: Path, port_range: tuple[int, int]) -> Stack:
    from sessionsched.backends.local import LocalCluster
    from sessionsched.client import SchedulerClient
    from sessionsched.commands._serverproc import ServerProcess

    first, last = port_range
    port = master_port(first, last)
    ui, worker_rpc, worker_ui, api_port = free_ports(port + 2, last, 4)
    cluster = LocalCluster(work / "cluster", workers=1, cores=sizes.cores, memory="8g",
                           port=port, rest_port=port + 1, ui_port=ui, start_timeout_s=180,
                           worker_ports=(worker_rpc, worker_ui))
    cluster.start()
    try:
        config = {
            "server": {"port": api_port, "cycle_ms": 200, "state_dir": str(work / "state")},
            "cluster": {"backend": "standalone", "master": cluster.master_url,
                        "master_ui": cluster.master_ui, "driver_slots": sizes.lows + 1},
            "defaults": {"queue": "root.prio"},
            "queues": queues(modes),
        }
        server = ServerProcess.start(config, work / "server")
    except BaseException:
        cluster.stop()
        raise
    return Stack(cluster, server, SchedulerClient(server.url))


# --- case 1: driver burst -----------------------------------------------------------------


JAR_MAIN = "SleepApp"


def build_jar(work: Path) -> Path:
    """``SleepApp TASK_MS TASKS EXIT_CODE`` (the tests' JVM app) compiled against pyspark's
    jars."""
    import subprocess

    from sessionsched.backends.spark_home import spark_home, spark_jars

    sys.path.insert(0, str(ROOT))  # the tests' sources are the one copy of SleepApp
    from tests.sparkcluster import JAVA_SOURCE

    directory = work / "jar"
    directory.mkdir()
    (directory / "SleepApp.java").write_text(JAVA_SOURCE)
    subprocess.run(["javac", "-cp", str(spark_jars(spark_home()) / "*"), "-d",
                    str(directory / "classes"), str(directory / "SleepApp.java")],
                   check=True, capture_output=True, timeout=180)
    jar = directory / "sleep-app.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", f"Manifest-Version: 1.0\nMain-Class: {JAR_MAIN}\n\n")
        for cls in sorted((directory / "classes").rglob("*.class")):
            z.write(cls, cls.relative_to(directory / "classes").as_posix())
    return jar


def create_request(jar: Path, name: str, master: str, sizes: Sizes,
                   queue: str | None) -> dict:
    """The CreateSubmissionRequest spark-submit --deploy-mode cluster sends."""
    props = {"spark.app.name": name, "spark.master": master,
             "spark.submit.deployMode": "cluster", "spark.jars": f"file:{jar}",
             "spark.driver.supervise": "false", "spark.cores.max": "1", **APP_CONF}
    if queue:
        props["spark.sessionsched.queue"] = queue
    return {"action": "CreateSubmissionRequest", "clientSparkVersion": "4.0.1",
            "appResource": f"file:{jar}", "mainClass": JAR_MAIN,
            "appArgs": [str(sizes.burst_task_ms), str(sizes.burst_tasks), "0"],
            "environmentVariables": {"SPARK_LOCAL_IP": "127.0.0.1"}, "sparkProperties": props}


@dataclass
class BurstRun:
    system: str
    submitted: int
    completed: int
    stalled: bool  # no completion and no executor core for stall_s: stopped
    timed_out: bool  # still making progress at timeout_s: stopped
    makespan_s: float | None  # submission to the last completion; None when not all completed
    elapsed_s: float  # how long the run was watched
    idle_driver_core_s: float
    timeline: list[dict] = field(default_factory=list)  # t, drivers, idle, executors, done


def burst_run(stack: Stack, jar: Path, sizes: Sizes, system: str, stall_s: float,
              timeout_s: float) -> BurstRun:
    """Submit ``sizes.burst`` apps at once to the stock master (``system`` "stock") or to a
    sessionsched queue (``system`` an admission mode); watch until all completed, or nothing
    moved (no completion, no executor core) for ``stall_s``, or ``timeout_s`` passed; then
    kill what is left and wait for an idle cluster."""
    from sessionsched.backends.base import BackendError
    from sessionsched.backends.master import MasterClient

    wait_idle(stack.master_ui)
    master = MasterClient(stack.master_ui)
    known = {d.id for d in master.read_master().drivers}
    if system == "stock":
        url, queue, spark_master = stack.cluster.rest_url, None, stack.cluster.master_url
    else:
        url, queue = stack.server.url, f"root.burst_{system}"
        spark_master = "spark://" + stack.server.url.removeprefix("http://")
    watch = Watch(stack.master_ui)
    t0 = time.time()

    def create(i: int) -> str:
        body = create_request(jar, f"burst-{system}-{i}", spark_master, sizes, queue)
        answer = httpx.post(f"{url}/v1/submissions/create", json=body, timeout=60).json()
        if not answer.get("success"):
            raise RuntimeError(f"{system}: submission refused: {answer.get('message')}")
        return answer["submissionId"]

    with ThreadPoolExecutor(sizes.burst) as pool:
        ids = list(pool.map(create, range(sizes.burst)))

    def finished() -> dict[str, str]:
        s = watch.last()
        return {k: v for k, v in (s.ended_drivers if s else {}).items() if k not in known}

    deadline = time.monotonic() + timeout_s
    moved_at, done_before = time.monotonic(), 0  # the last completion or executor core seen
    stalled = False
    while time.monotonic() < deadline and len(finished()) < sizes.burst:
        time.sleep(SAMPLE_S)
        last, done = watch.last(), len(finished())
        if done > done_before or (last is not None and last.executor_cores > 0):
            moved_at, done_before = time.monotonic(), done
        if time.monotonic() - moved_at >= stall_s:
            stalled = True
            break
    watch.stop()
    ended = finished()
    completed = sum(1 for state in ended.values() if state == "FINISHED")
    done_at: dict[str, float] = {}
    for s in watch.samples:
        for d, state in s.ended_drivers.items():
            if d not in known and state == "FINISHED":
                done_at.setdefault(d, s.t - t0)
    idle_core_s = sum(a.drivers_idle * (b.t - a.t)
                      for a, b in zip(watch.samples, watch.samples[1:], strict=False))
    timeline = [{"t": round(s.t - t0, 2), "drivers": s.running_drivers, "idle": s.drivers_idle,
                 "executors": s.executor_cores,
                 "done": sum(1 for v in done_at.values() if v <= s.t - t0)}
                for s in watch.samples]
    all_done = completed == sizes.burst
    run = BurstRun(system, len(ids), completed, stalled, not all_done and not stalled,
                   round(max(done_at.values()), 1) if all_done else None,
                   round((watch.samples[-1].t if watch.samples else time.time()) - t0, 1),
                   round(idle_core_s, 1), timeline)
    # Clean up: queued and running apps of the scheduler, then any driver left on the master.
    if system != "stock":
        for app in stack.api.apps(queue=queue):
            if not app.state.terminal:
                stack.api.kill(app.id)
    try:
        view = master.read_master()
        for d in view.drivers:
            if d.id not in known and d.exit_code is None:
                master.kill(d.id)
    except BackendError as e:
        print(f"  (could not kill the burst's drivers: {e})", file=sys.stderr)
    finally:
        master.close()
    wait_idle(stack.master_ui, 180)
    return run


# --- jobs: one PySpark app, straight to the master or through sessionsched ------------------


class StockJob:
    """spark-submit in client mode straight to the master (stock Spark), in its own process
    group; ended when spark-submit exits."""

    def __init__(self, stack: Stack, name: str, stages: str, log_dir: Path):
        import subprocess

        from sessionsched.backends import procs
        from sessionsched.backends.spark_home import spark_submit

        props = {**APP_CONF, **DYNAMIC}
        argv = [spark_submit(), "--master", stack.cluster.master_url, "--name", name,
                *[a for k, v in props.items() for a in ("--conf", f"{k}={v}")],
                str(APP), "--stages", stages]
        self.name = name
        self.submitted = time.time()
        with open(log_dir / f"{name}.log", "ab") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        self._id = procs.ProcessId(self.proc.pid, procs.start_ticks(self.proc.pid) or 0)
        self.ended_at: float | None = None

    def ended(self) -> bool:
        if self.ended_at is None and self.proc.poll() is not None:
            self.ended_at = time.time()
        return self.ended_at is not None

    def ok(self) -> bool:
        return self.proc.returncode == 0

    def stop(self) -> None:
        from sessionsched.backends import procs

        procs.stop_group(self._id, grace_s=10.0)
        self.proc.wait(10)


class SchedJob:
    """The same app submitted to sessionsched (``POST /api/v1/apps``: spark-submit with the
    agent's bootstrap); ended when the scheduler says so."""

    def __init__(self, stack: Stack, name: str, stages: str, queue: str, priority: int):
        from sessionsched.client import Submission

        argv = ["--name", name,
                *[a for k, v in APP_CONF.items() for a in ("--conf", f"{k}={v}")],
                str(APP), "--stages", stages]
        self.api, self.name = stack.api, name
        self.submitted = time.time()
        self.id = stack.api.submit(Submission(tuple(argv), str(APP.parent), queue=queue,
                                              priority=priority)).id
        self.ended_at: float | None = None
        self._state = None

    def ended(self) -> bool:
        if self.ended_at is None:
            app = self.api.app(self.id)
            if app.state.terminal:
                self.ended_at, self._state = time.time(), app.state.value
        return self.ended_at is not None

    def ok(self) -> bool:
        return self._state == "FINISHED"

    def stop(self) -> None:
        if not self.ended():
            self.api.kill(self.id)


def run_to_end(job, timeout_s: float) -> float:
    wait_for(job.ended, timeout_s, f"{job.name} to end", interval_s=0.25)
    if not job.ok():
        raise RuntimeError(f"{job.name} did not finish cleanly")
    return job.ended_at - job.submitted


# --- case 2: priority under contention ----------------------------------------------------


@dataclass
class PriorityRun:
    system: str
    solo_s: float  # the mean of solo_runs_s
    solo_runs_s: tuple[float, float]  # alone, before and after the contended run
    contended_s: float
    ratio: float
    cores_held_by_lows_at_submit: int
    queued_s: float | None  # sessionsched: submission to the driver's launch (admission wait)


def priority_runs(stack: Stack, sizes: Sizes, work: Path) -> list[PriorityRun]:
    high_stages = f"{max(sizes.cores // 2, 1)}x{sizes.task_s:g}"
    low_stages = f"{2 * sizes.cores}x{sizes.task_s:g}"
    timeout_s = 60 * sizes.task_s

    def make(system: str, name: str, stages: str, priority: int):
        if system == "stock":
            return StockJob(stack, name, stages, work)
        return SchedJob(stack, name, stages, f"root.{system}", priority)

    def alone(system: str, tag: str) -> float:
        wait_idle(stack.master_ui)
        solo = make(system, f"solo-{system}-{tag}", high_stages, HIGH)
        try:
            return run_to_end(solo, timeout_s)
        finally:
            solo.stop()
            wait_idle(stack.master_ui)

    runs = []
    for system, label in (("stock", "stock FIFO"), ("prio", "sessionsched priority"),
                          ("fair", "sessionsched fairshare")):
        # Alone before and after: on this machine the same app alone varies with the load
        # (38-80 s in one morning), so one solo time makes a noisy ratio.
        before = alone(system, "before")
        watch = Watch(stack.master_ui)
        lows = []
        high = None
        try:
            for i in range(sizes.lows):
                lows.append(make(system, f"low-{system}-{i}", low_stages, LOW))
            # The high-priority app comes once the low ones hold every core with executors
            # that run their tasks, and every core granted has one: not while their JVMs are
            # still starting, nor while a fairshare queue moves cores between them.
            names = {f"low-{system}-{i}" for i in range(sizes.lows)}

            def settled(n=names, w=watch) -> bool:
                up = executors_up(stack.cluster, n)
                return up >= sizes.cores and (s := w.last()) is not None \
                    and s.executor_cores == up

            wait_for(settled, 240, "the low-priority apps to fill the cluster", interval_s=1.0)
            held = watch.last().executor_cores
            high = make(system, f"high-{system}", high_stages, HIGH)
            contended_s = run_to_end(high, timeout_s)
        finally:
            watch.stop()
            for job in [*lows, *([high] if high else [])]:
                job.stop()
        queued = None
        if isinstance(high, SchedJob):
            app = stack.api.app(high.id)
            queued = round((app.started_at - app.submitted_at).total_seconds(), 1)
        after = alone(system, "after")
        solo_s = (before + after) / 2
        runs.append(PriorityRun(label, round(solo_s, 1), (round(before, 1), round(after, 1)),
                                round(contended_s, 1), round(contended_s / solo_s, 2), held,
                                queued))
        print(f"  {label}: solo {before:.1f} s / {after:.1f} s (before / after), behind "
              f"{sizes.lows} low-priority apps {contended_s:.1f} s", flush=True)
    wait_idle(stack.master_ui)
    return runs


# --- case 3: notebook share ---------------------------------------------------------------


@dataclass
class NotebookRun:
    first_split: tuple[int, int]
    second_split: tuple[int, int]
    converge_after_submit_s: float | None
    converge_after_change_s: float | None
    change_at_s: float
    b_submitted_at_s: float
    timeline: list[dict] = field(default_factory=list)  # t, a, b: executor cores (master)
    books: list[dict] = field(default_factory=list)  # t, a, b: executors (scheduler's books)


def settled_since(samples: list[Sample], after: float, split: tuple[int, int],
                  names: tuple[str, str]) -> float | None:
    """Seconds from ``after`` to the first sample showing ``split`` that still shows it for
    every sample of the next SETTLE_S seconds (None: never)."""
    def of(s: Sample) -> tuple[int, int]:
        return tuple(s.app_cores.get(n, 0) for n in names)

    later = [s for s in samples if s.t >= after]
    for i, s in enumerate(later):
        if of(s) != split:
            continue
        window = [x for x in later[i:] if x.t <= s.t + SETTLE_S]
        if later[-1].t >= s.t + SETTLE_S and all(of(x) == split for x in window):
            return s.t - after
    return None


def notebook_run(stack: Stack, sizes: Sizes) -> NotebookRun:
    third = sizes.cores // 3
    first_split = (third, sizes.cores - third)  # 5000 : 10000
    second_split = (sizes.cores - third, third)  # 5000 : 2500
    stages = f"{10 * sizes.cores}x{sizes.notebook_task_s:g}"  # far more than the cluster
    names = ("notebook-a", "notebook-b")
    wait_idle(stack.master_ui)
    watch = Watch(stack.master_ui)
    t0 = time.time()
    jobs: list[SchedJob] = []

    def split() -> tuple[int, int]:
        s = watch.last()
        return tuple(s.app_cores.get(n, 0) for n in names) if s else (0, 0)

    def holds(target: tuple[int, int], since: float):
        return lambda: settled_since(watch.samples, since, target, names) is not None

    books: list[dict] = []
    stop_books = threading.Event()

    def read_books() -> None:  # what the scheduler believes, beside what the master shows
        while not stop_books.is_set():
            try:
                held = [stack.api.app(j.id).executors for j in list(jobs)]
                books.append({"t": round(time.time() - t0, 2),
                              **dict(zip("ab", held, strict=False))})
            except Exception:  # a slow answer under load: the next read comes soon
                pass
            stop_books.wait(SAMPLE_S)

    reader = threading.Thread(target=read_books, daemon=True)
    reader.start()
    try:
        jobs.append(SchedJob(stack, names[0], stages, "root.notebook", 5000))
        # Each step starts once the executors of the last are up, not merely granted (their
        # JVMs may take 10-30 s more here): B comes to a cluster A runs on, and the priority
        # changes once B runs on its share.
        wait_for(lambda: executors_up(stack.cluster, {names[0]}) >= sizes.cores, 240,
                 "A to take the idle cluster", interval_s=1.0)
        jobs.append(SchedJob(stack, names[1], stages, "root.notebook", 10000))
        b_at = jobs[1].submitted
        wait_for(holds(first_split, b_at), 240, f"the split {first_split}")
        wait_for(lambda: executors_up(stack.cluster, {names[1]}) >= first_split[1], 240,
                 "B's executors to come up", interval_s=1.0)
        stack.api.set_priority(jobs[1].id, 2500)
        change_at = time.time()
        wait_for(holds(second_split, change_at), 240, f"the split {second_split}")
        end = time.time() + 5  # a little of the settled state on the plot
        wait_for(lambda: time.time() >= end, 10, "the plot's tail")
    finally:
        stop_books.set()
        reader.join(10)
        watch.stop()
        for job in jobs:
            job.stop()
    samples = watch.samples
    return NotebookRun(
        first_split, second_split,
        _round(settled_since(samples, b_at, first_split, names)),
        _round(settled_since(samples, change_at, second_split, names)),
        round(change_at - t0, 1), round(b_at - t0, 1),
        [{"t": round(s.t - t0, 2), "a": s.app_cores.get(names[0], 0),
          "b": s.app_cores.get(names[1], 0)} for s in samples], books)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


# --- output -------------------------------------------------------------------------------


def table(title: str, header: list[str], rows: list[list]) -> None:
    print(f"\n{title}")
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(c).rjust(w) for c, w in zip(row, widths, strict=True)))


def burst_label(system: str) -> str:
    return "stock Spark" if system == "stock" else f"sessionsched {system}"


def outcome(r: BurstRun) -> str:
    if r.stalled:
        return f"stalled (stopped at {r.elapsed_s:.0f} s)"
    if r.timed_out:
        return f"unfinished at {r.elapsed_s:.0f} s"
    return f"{r.makespan_s:.1f}" if r.makespan_s is not None else "failed"


def print_burst(runs: list[BurstRun]) -> None:
    rows = [[burst_label(r.system), f"{r.completed}/{r.submitted}", outcome(r),
             f"{r.idle_driver_core_s:.0f}",
             f"{r.idle_driver_core_s / max(r.elapsed_s, 1e-9):.1f}"] for r in runs]
    table("Driver burst: JVM apps in cluster deploy mode submitted at once",
          ["system", "completed", "makespan s", "idle-driver core-s",
           "mean idle-driver cores"], rows)


def print_priority(runs: list[PriorityRun]) -> None:
    rows = [[r.system, "{:.1f} / {:.1f}".format(*r.solo_runs_s), f"{r.contended_s:.1f}",
             "-" if r.queued_s is None else f"{r.queued_s:.1f}", f"{r.ratio:.2f}",
             "yes" if r.ratio <= 1.2 else "no"] for r in runs]
    table("Priority under contention: the high-priority app's completion time (s)",
          ["system", "solo before / after", "behind low-priority apps", "of which queued",
           "ratio to mean solo", "<= 1.2"], rows)


def print_notebook(run: NotebookRun) -> None:
    def s(x: float | None) -> str:
        return "never" if x is None else f"{x:.1f}"

    table("Notebook share (fairshare): seconds until the master shows the split, held 3 s",
          ["event", "split A:B", "seconds"],
          [["B submitted (5000 : 10000)", "{}:{}".format(*run.first_split),
            s(run.converge_after_submit_s)],
           ["B lowered to 2500 (5000 : 2500)", "{}:{}".format(*run.second_split),
            s(run.converge_after_change_s)]])


def plot_burst(runs: list[BurstRun], cores: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 1, figsize=(8, 1.9 * len(runs) + 0.6), sharex=True,
                             squeeze=False)
    for ax, r in zip(axes[:, 0], runs, strict=True):
        t = [p["t"] for p in r.timeline]
        idle = [p["idle"] for p in r.timeline]
        busy = [p["drivers"] - p["idle"] for p in r.timeline]
        ex = [p["executors"] for p in r.timeline]
        ax.stackplot(t, idle, busy, ex, step="post",
                     colors=["#e63946", "#457b9d", "#2a9d8f"],
                     labels=["drivers without executors", "drivers with executors",
                             "executor cores"])
        ax.set_ylim(0, cores + 2)  # room for the legend
        ax.set_ylabel("cores")
        done = ax.twinx()
        done.step(t, [p["done"] for p in r.timeline], where="post", color="black", lw=1.2)
        done.set_ylim(0, r.submitted + 0.5)
        done.set_ylabel("completed")
        end = outcome(r) if r.makespan_s is None else f"makespan {r.makespan_s:.0f} s"
        ax.set_title(f"{burst_label(r.system)}: {r.completed}/{r.submitted} completed, {end}",
                     fontsize=9)
    axes[0, 0].legend(loc="upper left", fontsize=7, ncol=3)
    axes[-1, 0].set_xlabel("seconds since the burst")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_priority(runs: list[PriorityRun], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar([r.system for r in runs], [r.ratio for r in runs],
           color=["#6d6875", "#2a9d8f", "#457b9d"][:len(runs)])
    ax.axhline(1.2, color="#e63946", ls="--", lw=1, label="goal: 1.2 x solo")
    ax.axhline(1.0, color="black", lw=0.8)
    for i, r in enumerate(runs):
        ax.text(i, r.ratio, f"{r.ratio:.2f}", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("completion / solo")
    ax.set_title("High-priority app behind low-priority ones", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_notebook(run: NotebookRun, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3))
    t = [p["t"] for p in run.timeline]
    ax.step(t, [p["a"] for p in run.timeline], where="post", label="A (5000)", color="#457b9d")
    ax.step(t, [p["b"] for p in run.timeline], where="post",
            label="B (10000, then 2500)", color="#e76f51")
    for key, color in (("a", "#457b9d"), ("b", "#e76f51")):
        seen = [p for p in run.books if key in p]
        ax.step([p["t"] for p in seen], [p[key] for p in seen], where="post", color=color,
                ls="--", lw=0.8, alpha=0.7)
    ax.plot([], [], color="gray", ls="--", lw=0.8, label="scheduler's books (dashed)")
    for at, text in ((run.b_submitted_at_s, "B submitted"),
                     (run.change_at_s, "B lowered to 2500")):
        ax.axvline(at, color="gray", ls=":", lw=1)
        ax.text(at, ax.get_ylim()[1] * 0.95, f" {text}", fontsize=7, va="top")
    ax.set_xlabel("seconds")
    ax.set_ylabel("executor cores")
    ax.set_title("Two notebooks under fairshare: the executor split", fontsize=9)
    ax.legend(fontsize=7, loc="center right")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


# --- main ---------------------------------------------------------------------------------


def default_modes() -> list[str]:
    """Every admission mode the engine has, the config's default first."""
    from sessionsched.config import QueueConfig
    from sessionsched.engine.admission import ADMISSION_MODES

    default = QueueConfig.model_fields["admission"].default
    names = [m.value for m in ADMISSION_MODES]
    return [default.value, *[n for n in names if n != default.value]]


def parse_modes(text: str) -> list[str]:
    from sessionsched.engine.admission import ADMISSION_MODES

    known = [m.value for m in ADMISSION_MODES]
    modes = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in modes if m not in known]
    if bad or not modes:
        raise argparse.ArgumentTypeError(
            f"{','.join(bad) or text!r}: expected admission modes among {', '.join(known)}")
    return list(dict.fromkeys(modes))


def parse_ports(text: str) -> tuple[int, int]:
    low, sep, high = text.partition("-")
    try:
        first, last = int(low), int(high)
    except ValueError:
        first = last = 0
    if not sep or not 1024 <= first < last <= 65535 or last - first < 10:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a range LOW-HIGH of at least 10 "
                                         "ports within 1024-65535")
    return first, last


CASES = ("burst", "priority", "notebook")


def parse_cases(text: str) -> list[str]:
    cases = [c.strip() for c in text.split(",") if c.strip()]
    bad = [c for c in cases if c not in CASES]
    if bad or not cases:
        raise argparse.ArgumentTypeError(
            f"{','.join(bad) or text!r}: expected cases among {', '.join(CASES)}")
    return cases


def machine() -> dict:
    import platform

    load = os.getloadavg()
    return {"cpus": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "load_1_5_15": [round(x, 2) for x in load]}


def main() -> None:
    p = argparse.ArgumentParser(
        description="sessionsched against stock Spark on a real local standalone cluster: "
                    "driver burst, priority under contention, notebook share. Prints tables, "
                    "writes results.json and PNG plots to --out.")
    p.add_argument("--quick", action="store_true",
                   help=f"a {QUICK.cores}-core cluster and short apps (a few minutes; checks "
                        f"that the script works); default: a {FULL.cores}-core cluster")
    p.add_argument("--out", type=Path, default=None,
                   help="directory for results.json and the plots (created; default: a new "
                        "temporary directory)")
    p.add_argument("--modes", type=parse_modes, default=None,
                   help="admission modes compared in the driver burst, comma separated "
                        f"(default: every mode, the config's default first: "
                        f"{','.join(default_modes())})")
    p.add_argument("--cases", type=parse_cases, default=list(CASES),
                   help=f"cases to run, comma separated (default: {','.join(CASES)})")
    p.add_argument("--stall-s", type=float, default=None,
                   help="a driver burst in which for this long no app completed and no "
                        "executor core was granted is stalled and stopped (default 120, "
                        "--quick 60)")
    p.add_argument("--timeout-s", type=float, default=None,
                   help="any driver burst is stopped after this long (default 900, "
                        "--quick 300)")
    p.add_argument("--ports", type=parse_ports, default=(47000, 47999),
                   help="127.0.0.1 port range for the master, its REST server and UI, the "
                        "worker and the scheduler (default 47000-47999)")
    a = p.parse_args()
    sizes = QUICK if a.quick else FULL
    modes = a.modes or default_modes()
    stall_s = a.stall_s or (60.0 if a.quick else 120.0)
    timeout_s = a.timeout_s or (300.0 if a.quick else 900.0)
    out = a.out or Path(tempfile.mkdtemp(prefix="real-cluster-out-"))
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="real-cluster-"))
    os.environ.update({"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable})

    results: dict = {"command": " ".join(["python", "benchmarks/real_cluster.py",
                                          *sys.argv[1:]]),
                     "sizes": asdict(sizes), "modes": modes, "stall_s": stall_s,
                     "timeout_s": timeout_s,
                     "machine_at_start": machine()}
    started = time.monotonic()
    stack = start_stack(sizes, modes, work, a.ports)
    print(f"cluster {stack.cluster.master_url}: 1 worker, {sizes.cores} cores (sleeping tasks; "
          f"the machine has {os.cpu_count()}); scheduler {stack.server.url}; logs in {work}; "
          f"load {machine()['load_1_5_15']}", flush=True)
    try:
        if "burst" in a.cases:
            jar = build_jar(work)
            runs = []
            for system in ["stock", *modes]:
                print(f"  burst: {burst_label(system)} ...", flush=True)
                runs.append(burst_run(stack, jar, sizes, system, stall_s, timeout_s))
            print_burst(runs)
            plot_burst(runs, sizes.cores, out / "burst.png")
            results["burst"] = [asdict(r) for r in runs]
        if "priority" in a.cases:
            print("  priority ...", flush=True)
            pruns = priority_runs(stack, sizes, work)
            print_priority(pruns)
            plot_priority(pruns, out / "priority.png")
            results["priority"] = [asdict(r) for r in pruns]
        if "notebook" in a.cases:
            print("  notebook share ...", flush=True)
            nb = notebook_run(stack, sizes)
            print_notebook(nb)
            plot_notebook(nb, out / "notebook.png")
            results["notebook"] = asdict(nb)
    finally:
        stack.stop()
        results["machine_at_end"] = machine()
        results["run_s"] = round(time.monotonic() - started, 1)
        (out / "results.json").write_text(json.dumps(results, indent=1))
    print(f"\nran {results['run_s']:.0f} s; load at the end "
          f"{results['machine_at_end']['load_1_5_15']}; results and plots in {out}")


if __name__ == "__main__":
    main()
