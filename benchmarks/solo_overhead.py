"""A solo app through sessionsched against stock spark-submit: what the queue costs on an idle
cluster, and where that time goes.

    python benchmarks/solo_overhead.py [--runs 3] [--warmup 1] [--cores 4] [--stages 16x4]
                                       [--run-timeout-s 300] [--ports 24000-24999]

Real parts only: one local standalone cluster from pyspark's Spark on 127.0.0.1 (1 worker of
``--cores`` 1-core/512m executors; the tasks sleep, so the worker may advertise more cores than
the machine has), ``sessionsched serve`` on it with the configuration's defaults (one queue,
``cycle_ms`` and the admission mode as shipped), and the same PySpark app
(``examples/apps/sleep_tasks.py --stages 16x4``: 16 tasks, dynamic allocation) run alternately

- stock: ``spark-submit --master spark://... app.py``, and
- sessionsched: ``sessionsched submit --server URL --wait app.py`` (the same arguments, no
  ``--master``),

each timed from the command's start to its exit, ``--runs`` of each (after ``--warmup`` rounds
not counted: the first JVMs on a fresh machine pay for cold caches). Prints each run, the
medians, the overhead (median sessionsched - median stock) and the stock runs' spread (the
machine's noise), and a breakdown of both: the milestones of each run, as seconds from the
command's start, medians over the runs:

- submitted / launched / finished: the server's app record (``submitted_at``, ``started_at``
  = the cycle that admitted and launched it, ``finished_at``); the agent's registration: the
  app's audit trail (``agent registered``);
- SparkContext begun (its start time), first job, first executor registered, first task, app
  end: Spark's event log
  (``spark.eventLog.enabled``, one directory per run);
- first executor requested (``ExecutorAllocationManager: Requesting``) and granted by the
  master (``Granted executor ID``): the driver's log, written with milliseconds by a log4j2
  configuration this script passes to both (``spark.driver.extraJavaOptions``);
- the agent attached (the end of the SparkContext's constructor) and granted by the scheduler:
  the agent's log lines ``attached in`` and ``grant N`` in the driver's log.

Every process started here is stopped by PID (the cluster, the server, each run's process
group), also on failure, timeout or Ctrl-C. A run that does not end within ``--run-timeout-s``
is stopped and reported; the script then goes on with the next. Everything is bounded.
Logs of every process stay in a temporary directory it prints; ``--out`` writes the figures
as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_cluster import (  # noqa: E402 - the helpers of the real-cluster benchmark
    APP,
    APP_CONF,
    DYNAMIC,
    free_ports,
    machine,
    master_port,
    parse_ports,
    table,
    wait_for,
    wait_idle,
)

# Milliseconds in the driver's log (Spark's default pattern has whole seconds only).
LOG4J2 = """\
rootLogger.level = info
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss.SSS} %p %c{1}: %m%n%ex
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = warn
"""
SPARK_TIME = re.compile(r"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}) ")
AGENT_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*sessionsched agent: \S+ "
                        r"(grant (\d+)|attached in)")
REQUESTED = "ExecutorAllocationManager: Requesting"
MASTER_GRANTED = "Granted executor ID"

# (key, label) in the order a run passes them; None where a system has no such milestone.
MILESTONES = (
    ("submitted", "submission stored (server)"),
    ("launched", "admitted and launched (server)"),
    ("app_up", "SparkContext begun (Spark's app start time)"),
    ("attached", "agent attached (SparkContext constructed)"),
    ("registered", "agent registered (server)"),
    ("first_job", "first job submitted"),
    ("sched_grant", "first executors granted by sessionsched (agent)"),
    ("requested", "first executor requested (allocation manager)"),
    ("master_grant", "first executor granted by the master"),
    ("executor_up", "first executor registered with the driver"),
    ("first_task", "first task started"),
    ("app_end", "Spark app ended"),
    ("finished", "app FINISHED on the server"),
    ("exited", "command exited"),
)


@dataclass
class Run:
    system: str  # "stock" | "sessionsched"
    index: int  # -1..: warm-up rounds are negative
    seconds: float | None  # the command's start to its exit; None: failed or timed out
    exit_code: int | None
    milestones: dict[str, float] = field(default_factory=dict)  # key -> seconds from start
    error: str | None = None


# --- reading what a run left behind -------------------------------------------------------


def event_log(directory: Path) -> dict[str, float]:
    """Epoch seconds of the milestones Spark's event log has (the one app in ``directory``)."""
    files = sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith(".")) \
        if directory.is_dir() else []
    out: dict[str, float] = {}
    if not files:
        return out
    with open(files[0], errors="replace") as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            kind = ev.get("Event")
            if kind == "SparkListenerApplicationStart":
                out["app_up"] = ev["Timestamp"] / 1000
            elif kind == "SparkListenerJobStart":
                out.setdefault("first_job", ev["Submission Time"] / 1000)
            elif kind == "SparkListenerExecutorAdded":
                out.setdefault("executor_up", ev["Timestamp"] / 1000)
            elif kind == "SparkListenerTaskStart":
                t = ev["Task Info"]["Launch Time"] / 1000
                out["first_task"] = min(out.get("first_task", t), t)
            elif kind == "SparkListenerApplicationEnd":
                out["app_end"] = ev["Timestamp"] / 1000
    return out


def driver_log(path: Path) -> dict[str, float]:
    """Epoch seconds of the milestones only the driver's log has."""
    out: dict[str, float] = {}
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return out
    for line in lines:
        if m := AGENT_TIME.match(line):
            at = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if m.group(3) is None:
                out.setdefault("attached", at)
            elif int(m.group(3)) > 0:
                out.setdefault("sched_grant", at)
            continue
        m = SPARK_TIME.match(line)
        if not m:
            continue
        at = datetime.strptime(m.group(1), "%y/%m/%d %H:%M:%S.%f").timestamp()
        if REQUESTED in line:
            out.setdefault("requested", at)
        elif MASTER_GRANTED in line:
            out.setdefault("master_grant", at)
    return out


def epoch(value) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    return datetime.fromisoformat(value).timestamp()


# --- one run of each system -----------------------------------------------------------------


class Setup:
    """The cluster, the server and what every run passes to Spark."""

    def __init__(self, work: Path, cores: int, stages: str, port_range: tuple[int, int]):
        from sessionsched.backends.local import LocalCluster
        from sessionsched.commands._serverproc import ServerProcess

        self.work, self.stages = work, stages
        (work / "log4j2.properties").write_text(LOG4J2)
        first, last = port_range
        port = master_port(first, last)
        ui, worker_rpc, worker_ui, api_port = free_ports(port + 2, last, 4)
        self.cluster = LocalCluster(work / "cluster", workers=1, cores=cores, memory="8g",
                                    port=port, rest_port=port + 1, ui_port=ui,
                                    start_timeout_s=180, worker_ports=(worker_rpc, worker_ui))
        self.cluster.start()
        try:
            config = {  # the shipped defaults but for where things live
                "server": {"port": api_port, "state_dir": str(work / "state")},
                "cluster": {"backend": "standalone", "master": self.cluster.master_url,
                            "master_ui": self.cluster.master_ui},
                "queues": [{"name": "root", "queues": [{"name": "default"}]}],
                "defaults": {"queue": "root.default"},
            }
            self.server = ServerProcess.start(config, work / "server")
        except BaseException:
            self.cluster.stop()
            raise
        self.http = httpx.Client(base_url=self.server.url, timeout=30)

    def stop(self) -> None:
        self.http.close()
        self.server.stop()
        self.cluster.stop()

    def spark_args(self, events: Path) -> list[str]:
        props = {**APP_CONF, **DYNAMIC, "spark.eventLog.enabled": "true",
                 "spark.eventLog.dir": f"file:{events}",
                 # One plain JSON file (Spark 4 rolls and compresses event logs by default).
                 "spark.eventLog.rolling.enabled": "false", "spark.eventLog.compress": "false",
                 "spark.driver.extraJavaOptions":
                     f"-Dlog4j2.configurationFile=file:{self.work / 'log4j2.properties'}"}
        return [*[a for k, v in props.items() for a in ("--conf", f"{k}={v}")],
                str(APP), "--stages", self.stages]

    def run(self, system: str, index: int, timeout_s: float) -> Run:
        from sessionsched.backends import procs
        from sessionsched.backends.spark_home import spark_submit

        wait_idle(self.cluster.master_ui, 180)
        name = f"solo-{system}-{index}"
        events = self.work / "events" / name
        events.mkdir(parents=True)
        if system == "stock":
            cmd = [spark_submit(), "--master", self.cluster.master_url, "--name", name,
                   *self.spark_args(events)]
        else:
            cmd = [sys.executable, "-m", "sessionsched.cli", "submit", "--server",
                   self.server.url, "--wait", "--name", name, *self.spark_args(events)]
        out_path = self.work / f"{name}.log"
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        with open(out_path, "wb") as out:
            t0 = time.time()
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, env=env, cwd=APP.parent,
                                    start_new_session=True)
        pid = procs.ProcessId(proc.pid, procs.start_ticks(proc.pid) or 0)
        try:
            code = proc.wait(timeout_s)
            seconds, error = time.time() - t0, None
        except subprocess.TimeoutExpired:
            code, seconds, error = None, None, f"not ended after {timeout_s:g} s: stopped"
        finally:
            procs.stop_group(pid, grace_s=10.0)  # whatever it left (nothing, normally)
            proc.wait(10)
        app_id = None
        if system != "stock":
            first = out_path.read_text(errors="replace").split()
            app_id = next((w for w in first if w.startswith("driver-")), None)
            if app_id is not None and error is not None:
                self.http.post(f"/api/v1/apps/{app_id}/kill")
        if error is None and code != 0:
            error = f"exit code {code}; see {out_path}"
        at: dict[str, float] = {**event_log(events)}
        at["exited"] = t0 + seconds if seconds is not None else None
        if system == "stock":
            at.update(driver_log(out_path))
        elif app_id is not None:
            at.update(self._server_side(app_id))
        milestones = {k: round(v - t0, 3) for k, v in at.items() if v is not None}
        return Run(system, index, None if error else round(seconds, 3), code, milestones,
                   error)

    def _server_side(self, app_id: str) -> dict[str, float]:
        def ended() -> dict | None:
            app = self.http.get(f"/api/v1/apps/{app_id}").json()
            return app if app.get("state") in ("FINISHED", "FAILED", "KILLED") else None

        app = wait_for(ended, 60, f"{app_id} to end on the server")
        out = {"submitted": epoch(app.get("submitted_at")),
               "launched": epoch(app.get("started_at")),
               "finished": epoch(app.get("finished_at"))}
        for row in self.http.get(f"/api/v1/apps/{app_id}/events").json():
            if "agent registered" in row.get("detail", ""):
                out.setdefault("registered", epoch(row.get("at")))
        # The driver's log: where the server keeps launched drivers' logs (server.state_dir).
        out.update(driver_log(self.work / "state" / "logs" / f"{app_id}.log"))
        return out


# --- output -------------------------------------------------------------------------------


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def cell(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def report(runs: list[Run]) -> dict:
    counted = [r for r in runs if r.index >= 0]
    by = {s: [r for r in counted if r.system == s] for s in ("stock", "sessionsched")}
    table("Runs (seconds from the command's start to its exit)",
          ["run", "stock", "sessionsched"],
          [[i + 1, *[cell(by[s][i].seconds if i < len(by[s]) else None) +
                     ("" if i >= len(by[s]) or not by[s][i].error else f" ({by[s][i].error})")
                     for s in by]]
           for i in range(max(len(v) for v in by.values()))])
    ok = {s: [r.seconds for r in v if r.seconds is not None] for s, v in by.items()}
    med = {s: median(v) for s, v in ok.items()}
    overhead = (med["sessionsched"] - med["stock"]
                if None not in (med["stock"], med["sessionsched"]) else None)
    spread = (max(ok["stock"]) - min(ok["stock"])) if ok["stock"] else None
    print(f"\nmedian: stock {cell(med['stock'])} s, sessionsched {cell(med['sessionsched'])} s; "
          f"overhead {cell(overhead)} s (target <= 1 s); stock spread (max - min) "
          f"{cell(spread)} s over {len(ok['stock'])} runs")
    rows = []
    for key, label in MILESTONES:
        m = {s: median([r.milestones[key] for r in v if key in r.milestones])
             for s, v in by.items()}
        if m["stock"] is None and m["sessionsched"] is None:
            continue
        diff = (m["sessionsched"] - m["stock"]) if None not in m.values() else None
        rows.append([label, cell(m["stock"]), cell(m["sessionsched"]),
                     "" if diff is None else f"{diff:+.2f}"])
    table("Breakdown: medians of each milestone, seconds from the command's start",
          ["milestone", "stock", "sessionsched", "difference"], rows)
    return {"median_s": med, "overhead_s": overhead, "stock_spread_s": spread,
            "runs": [asdict(r) for r in runs]}


def main() -> None:
    p = argparse.ArgumentParser(
        description="Solo-app overhead: the same PySpark app (dynamic allocation) through "
                    "stock spark-submit and through 'sessionsched submit --wait' on one idle "
                    "local standalone cluster, alternately; prints each run, the medians, the "
                    "overhead and where sessionsched's extra time goes.")
    p.add_argument("--runs", type=int, default=3, help="counted runs of each system (default 3)")
    p.add_argument("--warmup", type=int, default=1,
                   help="rounds of both run first and not counted (default 1)")
    p.add_argument("--cores", type=int, default=4,
                   help="the worker's cores (1-core executors; default 4)")
    p.add_argument("--stages", default="16x4",
                   help="the app's jobs, TASKSxSECONDS each (default 16x4: 16 tasks of 4 s)")
    p.add_argument("--run-timeout-s", type=float, default=300.0,
                   help="a run not ended after this long is stopped (default 300)")
    p.add_argument("--ports", type=parse_ports, default=(24000, 24999),
                   help="127.0.0.1 port range for the master, its REST server and UI, the "
                        "worker and the scheduler (default 24000-24999)")
    p.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    a = p.parse_args()
    if a.runs < 1 or a.warmup < 0 or a.cores < 1:
        p.error("--runs and --cores must be at least 1, --warmup at least 0")
    work = Path(tempfile.mkdtemp(prefix="solo-overhead-"))
    os.environ.update({"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable})
    at_start = machine()
    setup = Setup(work, a.cores, a.stages, a.ports)
    print(f"cluster {setup.cluster.master_url}: 1 worker, {a.cores} cores; scheduler "
          f"{setup.server.url}; app {APP.name} --stages {a.stages}; logs in {work}; "
          f"load {at_start['load_1_5_15']}", flush=True)
    runs: list[Run] = []
    try:
        for i in range(-a.warmup, a.runs):
            for system in ("stock", "sessionsched"):
                run = setup.run(system, i, a.run_timeout_s)
                runs.append(run)
                print(f"  {'warm-up' if i < 0 else f'run {i + 1}'} {system}: "
                      f"{cell(run.seconds)} s{f' ({run.error})' if run.error else ''}",
                      flush=True)
    finally:
        setup.stop()
    results = report(runs)
    results.update(machine_at_start=at_start, machine_at_end=machine(),
                   command=" ".join(["python", "benchmarks/solo_overhead.py", *sys.argv[1:]]))
    print(f"\nload (1, 5, 15 min) at the start {at_start['load_1_5_15']}, at the end "
          f"{results['machine_at_end']['load_1_5_15']} ({os.cpu_count()} CPUs)")
    if a.out:
        a.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
