"""How fast the driver agent turns decisions into executors, and what it costs a job.

    python benchmarks/agent_latency.py [--reps 5] [--cores 4] [--skip reaction,reclaim,overhead]

Real parts only: a local Spark standalone cluster from pyspark's Spark (1 worker, ``--cores``
1-core/512m executors, sleep-based tasks so a 2-core machine can host it), ``sessionsched
serve`` on it, and PySpark drivers as notebook sessions (``sessionsched.session``) in child
processes of this script. Each driver samples its own state every 50 ms (registered executors,
the grant of its agent's last answer) and prints it; this script reads the samples.

Three tables:

1. **Reaction**: an idle app (0 executors) starts a job of ``cores`` tasks. From the job's
   start to the grant covering it (the agent reported the demand, the scheduler decided, the
   agent got the answer), and to all executors registered. Beside it, the same job in a plain
   dynamic-allocation app without sessionsched: the part of the delay that is Spark's own
   (backlog timeout, exponential ramp, executor JVM start).
2. **Reclaim**, per queue mode (``reclaim_timeout`` 0 kill / 30 decommission / -1 idle): app A
   holds every executor with busy tasks; app B (higher priority, ``priority`` policy) starts a
   job wanting half. From B's job start to A's surplus gone, and to B's executors registered.
3. **Overhead**: the same job (many short tasks) on 2 fixed executors, with the agent attached
   and without; medians over alternating runs, plus the agent loop's own time per second.

Ports: the cluster and the server take free 127.0.0.1 ports. Everything started here is
stopped by PID on exit, also on failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve()
EXECUTOR_CONF = {
    "spark.executor.cores": "1",
    "spark.executor.memory": "512m",
    "spark.driver.memory": "512m",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    # Its progress bar, on the driver's stderr without a newline, would run into the JSON
    # lines this script reads from the same log.
    "spark.ui.showConsoleProgress": "false",
    "spark.dynamicAllocation.executorIdleTimeout": "2s",
}
QUEUES = [{"name": "root", "queues": [
    {"name": "kill", "policy": "priority", "reclaim_timeout": 0, "admission": "none"},
    {"name": "graceful", "policy": "priority", "reclaim_timeout": 30, "admission": "none"},
    {"name": "idle", "policy": "priority", "reclaim_timeout": -1, "admission": "none"},
]}]


# --- the driver side (runs in a child process) --------------------------------------------------


def driver_main(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--server")
    p.add_argument("--master")
    p.add_argument("--name", required=True)
    p.add_argument("--queue", default="root.kill")
    p.add_argument("--priority", type=int, default=5000)
    p.add_argument("--tasks", type=int, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--fixed", type=int, default=0, help="min=max executors (overhead runs)")
    a = p.parse_args(argv)

    conf = dict(EXECUTOR_CONF)
    if a.fixed:
        conf.update({"spark.dynamicAllocation.minExecutors": str(a.fixed),
                     "spark.dynamicAllocation.initialExecutors": str(a.fixed),
                     "spark.dynamicAllocation.maxExecutors": str(a.fixed)})
    if a.server:
        import sessionsched
        spark = sessionsched.session(a.name, queue=a.queue, priority=a.priority, server=a.server,
                                     conf=conf, progress=False)
        agent = spark.sessionsched.agent
        agent_since = time.perf_counter()
    else:  # plain dynamic allocation, no sessionsched
        from pyspark.sql import SparkSession

        from sessionsched.agent.launch import dynamic_allocation_conf
        builder = SparkSession.builder.master(a.master).appName(a.name)
        for k, v in {**dynamic_allocation_conf({})[0], **conf}.items():
            builder = builder.config(k, v)
        spark = builder.getOrCreate()
        agent = None
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    from sessionsched.agent.spark_control import SparkControl
    control = agent.control if agent else SparkControl(sc)

    def emit(**kv):
        print(json.dumps({"t": time.time(), **kv}), flush=True)

    stop = threading.Event()

    def sample():
        while not stop.is_set():
            try:
                grant = agent.grant if agent else None  # the grant in force
                emit(ex=len(control.executors()), grant=grant, target=control.target())
            except Exception:
                pass
            stop.wait(0.05)

    def quit_on_eof():  # the orchestrator closes our stdin: cancel the work, end cleanly
        sys.stdin.read()
        stop.set()
        sc.cancelAllJobs()

    threading.Thread(target=sample, daemon=True).start()
    threading.Thread(target=quit_on_eof, daemon=True).start()
    emit(event="ready")
    seconds = a.seconds
    for rep in range(a.reps):
        deadline = time.monotonic() + 120
        while not stop.is_set() and time.monotonic() < deadline:
            n = len(control.executors())  # start from zero (idle timeout), or the fixed size
            if (n >= a.fixed) if a.fixed else n == 0:
                break
            time.sleep(0.1)
        if stop.is_set():
            break
        emit(event="job", rep=rep)
        started = time.perf_counter()
        try:
            sc.parallelize(range(a.tasks), a.tasks).map(lambda x: (time.sleep(seconds), x)[1]
                                                        ).count()
        except Exception:
            break  # cancelled
        emit(event="done", rep=rep, seconds=time.perf_counter() - started)
    if agent:
        emit(event="agent", cycles=agent.cycles, busy_s=agent.busy_s, cpu_s=agent.cpu_s,
             alive_s=time.perf_counter() - agent_since)
    stop.set()
    spark.stop()


# --- the orchestrator -----------------------------------------------------------------------


class Driver:
    """A driver child process and the JSON lines it printed so far."""

    def __init__(self, args: list[str], log: Path):
        self.lines: list[dict] = []
        self._log = open(log, "w")
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([sys.executable, str(HERE), "--driver", *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log, text=True, env=env,
                                     start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.lines.append(json.loads(line))

    def event(self, name: str, rep: int | None = None) -> dict | None:
        return next((x for x in self.lines if x.get("event") == name
                     and (rep is None or x.get("rep") == rep)), None)

    def _wait(self, pred, what: str, timeout_s: float):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = pred()
            if value is not None:
                return value
            if self.proc.poll() is not None and pred() is None:
                raise RuntimeError(f"driver exited ({self.proc.returncode}) waiting for {what}; "
                                   f"see {self._log.name}")
            time.sleep(0.05)
        raise TimeoutError(f"timed out after {timeout_s:g}s waiting for {what}")

    def wait_event(self, name: str, rep: int | None = None, timeout_s: float = 240.0) -> dict:
        return self._wait(lambda: self.event(name, rep), f"event {name}", timeout_s)

    def wait_since(self, after: float, cond, what: str, timeout_s: float = 240.0) -> float:
        return self._wait(lambda: self.since(after, cond), what, timeout_s)

    def since(self, after: float, cond) -> float | None:
        """Seconds from ``after`` to the first sample that satisfies ``cond`` (None: never)."""
        t = next((x["t"] for x in self.lines if "ex" in x and x["t"] >= after and cond(x)), None)
        return None if t is None else t - after

    def stop(self):
        """Close the driver's stdin (it cancels its work, stops Spark, ends its session), then
        wait; SIGKILL its process group if it has not gone within 60 s."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self._log.close()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def p50_p95(values: list[float | None], digits: int = 1) -> list[str]:
    """Two cells; runs where the condition never held are counted, not hidden."""
    seen = [v for v in values if v is not None]
    if not seen:
        return ["-", "-"]
    missed = len(values) - len(seen)
    tail = f" ({missed} never)" if missed else ""
    return [f"{pct(seen, .5):.{digits}f}", f"{pct(seen, .95):.{digits}f}{tail}"]


def table(title: str, header: list[str], rows: list[list]) -> None:
    print(f"\n{title}")
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(c).rjust(w) for c, w in zip(row, widths, strict=True)))


def reaction(server: str, master: str, cores: int, reps: int, work: Path) -> None:
    variants = {"sessionsched agent": ["--server", server],
                "plain dynamic allocation": ["--master", master]}
    seen: dict[str, dict[str, list]] = {k: {"grant": [], "target": [], "ex": []} for k in variants}
    for rep in range(reps):  # alternate, so both see the same machine load
        for label, args in variants.items():
            # Tasks long enough that the job needs every executor, however slowly they start.
            d = Driver([*args, "--name", "reaction", "--tasks", str(cores), "--seconds", "25"],
                       work / f"reaction-{rep}-{label.split()[0]}.log")
            try:
                d.wait_event("done", 0, timeout_s=180)
            finally:
                d.stop()
            t0 = d.event("job", 0)["t"]
            for key in ("grant", "target", "ex"):
                seen[label][key].append(d.since(t0, lambda x, k=key: (x[k] or 0) >= cores))
    rows = [[label, reps, *(p50_p95(v["grant"]) if label.startswith("sessionsched") else ["-"] * 2),
             *p50_p95(v["target"]), *p50_p95(v["ex"])] for label, v in seen.items()]
    table(f"Reaction: idle app starts a job of {cores} tasks (seconds from job start to: the "
          "grant covering it, Spark's request for it, all executors registered)",
          ["app", "runs", "grant p50", "p95", "requested p50", "p95", "registered p50", "p95"],
          rows)


class MasterWatch:
    """Cores the master has granted each running app, by app name, every 100 ms: when a
    reclaimed executor's core is really free (the driver lists a killed executor for 5 s more)."""

    def __init__(self, master_ui: str):
        self.url = master_ui.rstrip("/") + "/json/"
        self.samples: list[tuple[float, dict[str, int]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        import urllib.request
        while not self._stop.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=2) as r:
                    apps = json.load(r)["activeapps"]
                self.samples.append((time.time(), {a["name"]: a["cores"] for a in apps}))
            except OSError:
                pass
            self._stop.wait(0.1)

    def since(self, after: float, name: str, cond) -> float | None:
        t = next((t for t, cores in self.samples if t >= after and cond(cores.get(name, 0))),
                 None)
        return None if t is None else t - after

    def stop(self):
        self._stop.set()
        self._thread.join(5)


def reclaim(server: str, master_ui: str, cores: int, reps: int, work: Path) -> None:
    want_b = max(cores // 2, 1)
    rows = []
    # (queue, mode, A's tasks per executor, A's task seconds). Idle-only reclaim waits for A's
    # executors to go idle, so there A runs one round of tasks: the figure is the wait for it.
    modes = (("root.kill", "kill", 4, 60), ("root.graceful", "decommission", 4, 12),
             ("root.idle", "idle", 1, 12))
    for queue, mode, rounds, a_seconds in modes:
        gone, got = [], []
        for rep in range(reps):
            watch = MasterWatch(master_ui)
            a = Driver(["--server", server, "--name", "holder", "--queue", queue,
                        "--priority", "1000", "--tasks", str(cores * rounds), "--seconds",
                        str(a_seconds)], work / f"reclaim-{mode}-{rep}-a.log")
            b = None
            try:
                a.wait_since(0, lambda x: x["ex"] >= cores, "A at full size")
                b = Driver(["--server", server, "--name", "claimer", "--queue", queue,
                            "--priority", "9000", "--tasks", str(want_b), "--seconds", "20"],
                           work / f"reclaim-{mode}-{rep}-b.log")
                t0 = b.wait_event("job")["t"]
                b.wait_since(t0, lambda x: x["ex"] >= want_b, "B's executors")
                gone.append(watch.since(t0, "holder", lambda n: n <= cores - want_b))
                got.append(b.since(t0, lambda x: x["ex"] >= want_b))
            finally:
                for d in (b, a):
                    if d is not None:
                        d.stop()
                watch.stop()
        rows.append([mode, reps, *p50_p95(gone), *p50_p95(got)])
    table(f"Reclaim: B (priority 9000) asks {want_b} of A's {cores} busy executors "
          "(seconds from B's job start)",
          ["mode", "runs", "A's cores freed p50", "p95", "B registered p50", "p95"], rows)


def overhead(server: str, master: str, reps: int, work: Path) -> None:
    runs: dict[str, list[float]] = {"with agent": [], "without": []}
    busy, cpu = [], []
    job = ["--tasks", "100", "--seconds", "0.05", "--reps", "3", "--fixed", "2"]
    for rep in range(reps):
        for label, args in (("with agent", ["--server", server]),
                            ("without", ["--master", master])):
            d = Driver([*args, "--name", "overhead", *job], work / f"overhead-{rep}-{label}.log")
            try:
                d.wait_event("done", 2)
                if label == "with agent":
                    stats = d.wait_event("agent")
                    busy.append(stats["busy_s"] / stats["alive_s"])
                    cpu.append(stats["cpu_s"] / stats["alive_s"])
            finally:
                d.stop()
            runs[label] += [d.event("done", r)["seconds"] for r in (1, 2)]  # run 0 warms up
    med = {k: statistics.median(v) for k, v in runs.items()}
    rows = [[k, len(v), f"{med[k]:.2f}", f"{min(v):.2f}", f"{max(v):.2f}"] for k, v in runs.items()]
    table("Overhead: 100 tasks x 50 ms on 2 fixed executors (job seconds)",
          ["app", "jobs", "median", "min", "max"], rows)
    print(f"  runtime overhead (median): {100 * (med['with agent'] / med['without'] - 1):+.1f} %")
    print(f"  agent loop, per second alive: {1000 * statistics.median(busy):.1f} ms of wall time "
          f"(waiting on the driver's JVM and the scheduler included), "
          f"{1000 * statistics.median(cpu):.1f} ms of its thread's CPU "
          f"({statistics.median(cpu) * 100:.2f} % of one core)")


def free_ports(first: int, last: int, n: int) -> list[int]:
    """``n`` ports of first..last that are free on 127.0.0.1 now, lowest first."""
    from sessionsched.backends.ports import free_port_in

    out: list[int] = []
    while len(out) < n:
        out.append(free_port_in(range(first, last + 1), set(out)))
    return out


def start_stack(cores: int, work: Path, port_range: tuple[int, int]):
    """A local cluster and ``sessionsched serve`` on it, their ports in ``port_range``;
    (cluster, server), both started."""
    import yaml

    from sessionsched.backends.local import LocalCluster
    from sessionsched.commands._serverproc import ServerProcess

    master, rest, ui, api = free_ports(*port_range, 4)
    cluster = LocalCluster(work / "cluster", workers=1, cores=cores, memory="4g", port=master,
                           rest_port=rest, ui_port=ui, start_timeout_s=180)
    cluster.start()
    try:
        config = {"server": {"host": "127.0.0.1", "port": api, "cycle_ms": 200,
                             "state_dir": str(work / "state")},
                  "cluster": {"backend": "standalone", "master": cluster.master_url,
                              "master_ui": cluster.master_ui, "driver_slots": 4},
                  "defaults": {"queue": "root.kill"}, "queues": QUEUES}
        (work / "server").mkdir()
        config_path = work / "server" / "sessionsched.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        log_path = work / "server" / "server.log"
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "sessionsched.cli", "serve", "--config", str(config_path)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        server = ServerProcess(proc, f"http://127.0.0.1:{api}", config_path, log_path)
        try:
            server.wait_ready(60)
        except BaseException:
            server.stop()
            raise
        return cluster, server
    except BaseException:
        cluster.stop()
        raise


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--cores", type=int, default=4)
    p.add_argument("--skip", default="", help="comma list of: reaction, reclaim, overhead")
    p.add_argument("--master", help="use this running cluster (its cores = --cores), ...")
    p.add_argument("--master-ui", help="... its master's web UI, ...")
    p.add_argument("--server", help="... and this running server, whose queues are QUEUES")
    p.add_argument("--ports", default="27000-27999",
                   help="range for the cluster's and the server's ports (default 27000-27999)")
    a = p.parse_args()
    skip = set(filter(None, a.skip.split(",")))

    work = Path(tempfile.mkdtemp(prefix="agent-bench-"))
    cluster = server = None
    try:
        if a.master and a.master_ui and a.server:
            master, master_ui, url = a.master, a.master_ui, a.server
        else:
            first, _, last = a.ports.partition("-")
            cluster, server = start_stack(a.cores, work, (int(first), int(last)))
            master, master_ui, url = cluster.master_url, cluster.master_ui, server.url
        print(f"cluster {master}: 1 worker, {a.cores} cores; server {url}; logs in {work}")
        if "reaction" not in skip:
            reaction(url, master, a.cores, a.reps, work)
        if "reclaim" not in skip:
            reclaim(url, master_ui, a.cores, max(a.reps // 2, 1), work)
        if "overhead" not in skip:
            overhead(url, master, max(a.reps // 2, 2), work)
    finally:
        if server is not None:
            server.stop()
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--driver":
        driver_main(sys.argv[2:])
    else:
        main()
