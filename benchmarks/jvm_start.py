"""What one Spark JVM start costs, under different JVM options: with and without the test
suite's class-data-sharing archive (tests/jvm_archive.py), and any options to try on top.

    python benchmarks/jvm_start.py [--rounds 3] [--ports 21000-21999]
                                   [--variant NAME=OPTIONS ...]

Variants (default: ``c1`` = ``-XX:TieredStopAtLevel=1``, what tests/conftest.py gives every
JVM, and ``c1+cds`` = that plus the archive's options; the archive is built first when there
is none, as ``python -m tests.jvm_archive`` does) run alternately, ``--rounds`` times each, as
``JAVA_TOOL_OPTIONS`` of:

(a) master: a standalone master (``spark-class ...Master``) from its start to its UI's JSON
    answering; CPU = the master JVM's user+sys at that moment (/proc);
(b) submit: ``spark-submit`` of the suite's tiny PySpark app (tests/sparkcluster.APP_SOURCE,
    one job of one 0.2 s task) on a local standalone cluster, from start to exit; CPU = the
    command's user+sys with everything it waited for (the launcher JVM, the driver JVM, the
    Python driver; ``os.wait4``);
(c) executor: that app's one executor (``spark.executorEnv.JAVA_TOOL_OPTIONS``): its process
    start to its ``SparkListenerExecutorAdded`` in the event log (registered with the driver),
    and its user+sys over its life (sampled from /proc every 50 ms until it exits).

Prints every measurement, then the medians per variant and the load average before and after
(the machine may be shared: compare variants of the same run). Every process started here is
stopped by PID, also on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sessionsched.backends import procs  # noqa: E402
from sessionsched.backends.local import LocalCluster  # noqa: E402
from sessionsched.backends.spark_home import spark_class, spark_submit  # noqa: E402
from tests import jvm_archive, sparkcluster  # noqa: E402

C1 = "-XX:TieredStopAtLevel=1"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def started_at(pid: int) -> float:
    """The process's start as wall-clock time."""
    boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                if line.startswith("btime"))
    return boot + procs.start_ticks(pid) / TICK


def env_with(options: str) -> dict[str, str]:
    return {**os.environ, "JAVA_TOOL_OPTIONS": options, "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable}


def master_start(options: str, work: Path) -> dict:
    port, _, ui_port = sparkcluster.master_ports()
    with open(work / "master.log", "ab") as log:
        popen = subprocess.Popen(
            [spark_class(), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(ui_port)], stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env_with(options),
            cwd=work, start_new_session=True)
    proc = procs.identify(popen.pid)
    begun = time.monotonic()
    try:
        import httpx

        def answers() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{ui_port}/json/", timeout=2).is_success
            except httpx.HTTPError:
                return False

        sparkcluster.wait_until(answers, 180, "the master's UI", interval_s=0.02)
        return {"wall_s": time.monotonic() - begun, "cpu_s": cpu_s(popen.pid)}
    finally:
        procs.stop_group(proc, grace_s=10.0)
        popen.wait(timeout=10)


def submit(options: str, cluster: LocalCluster, app: Path, work: Path) -> dict:
    events = work / f"events-{time.monotonic_ns()}"
    events.mkdir()
    conf = {**sparkcluster.SMALL, "spark.cores.max": "1",
            "spark.executorEnv.JAVA_TOOL_OPTIONS": options,
            "spark.eventLog.enabled": "true", "spark.eventLog.dir": str(events),
            "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"}
    args = [spark_submit(), "--master", cluster.master_url, *sparkcluster.conf_args(conf),
            str(app), "--tasks", "1", "--task-s", "0.2"]
    executors: dict[int, dict] = {}
    with open(work / "submit.log", "ab") as log:
        begun = time.monotonic()
        popen = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=env_with(options),
                                 start_new_session=True)
    proc = procs.identify(popen.pid)
    try:
        while True:
            pid, status, usage = os.wait4(popen.pid, os.WNOHANG)
            if pid:
                wall = time.monotonic() - begun
                popen.returncode = os.waitstatus_to_exitcode(status)
                break
            sample_executors(executors, str(cluster.directory))
            time.sleep(0.05)
        deadline = time.monotonic() + 60
        while any(cpu_s(p) is not None for p in executors) and time.monotonic() < deadline:
            sample_executors(executors, str(cluster.directory))
            time.sleep(0.05)
    finally:
        procs.stop_group(proc, grace_s=10.0)
    if popen.returncode != 0:
        raise RuntimeError(f"spark-submit exited {popen.returncode}: see {work / 'submit.log'}")
    result = {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime}
    added = executor_added_at(events)
    if len(executors) == 1 and added is not None:
        (info,) = executors.values()
        result["executor_registered_s"] = added - info["start"]
        result["executor_cpu_s"] = info["cpu"]
    return result


def sample_executors(executors: dict[int, dict], under: str) -> None:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid not in executors:
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            try:
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            # This cluster's executors run in its worker's directory (others may share the
            # machine).
            if b"CoarseGrainedExecutorBackend" not in cmdline or not cwd.startswith(under):
                continue
            executors[pid] = {"start": started_at(pid), "cpu": 0.0}
        used = cpu_s(pid)
        if used is not None:
            executors[pid]["cpu"] = used


def executor_added_at(events: Path) -> float | None:
    for log in (p for p in events.rglob("*") if p.is_file()):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event.get("Event") == "SparkListenerExecutorAdded":
                return event["Timestamp"] / 1000
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ports", default=os.environ.get("SESSIONSCHED_TEST_PORTS",
                                                         "17000-17999"))
    parser.add_argument("--variant", action="append", default=[],
                        help="NAME=JAVA_TOOL_OPTIONS (repeatable)")
    args = parser.parse_args()
    os.environ["SESSIONSCHED_TEST_PORTS"] = args.ports
    sparkcluster.PORT_RANGE = sparkcluster._port_range(args.ports)
    variants = dict(v.split("=", 1) for v in args.variant)
    if not variants:
        cds = jvm_archive.java_options()
        if cds is None:
            jvm_archive.build()
            cds = jvm_archive.java_options()
        if cds is None:
            print("no usable archive (SESSIONSCHED_JVM_ARCHIVE=off?): nothing to compare")
            return 1
        variants = {"c1": C1, "c1+cds": f"{C1} {cds}"}
    print(f"load average before: {os.getloadavg()}")
    results: dict[str, list[dict]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory(prefix="jvm-start-") as tmp:
        work = Path(tmp)
        app = work / "app.py"
        app.write_text(sparkcluster.APP_SOURCE)

        def make() -> LocalCluster:
            port, rest_port, ui_port = sparkcluster.master_ports()
            return LocalCluster(work / "cluster", workers=1, cores=2, memory="2g", port=port,
                                ui_port=ui_port, rest_port=rest_port, start_timeout_s=180)

        os.environ["JAVA_TOOL_OPTIONS"] = C1  # the cluster's own JVMs, as the suite runs them
        with sparkcluster.started_cluster(make) as cluster:
            for round_ in range(args.rounds):
                for name, options in variants.items():
                    figures = {**{f"master_{k}": v for k, v in
                                  master_start(options, work).items()},
                               **{f"submit_{k}": v for k, v in
                                  submit(options, cluster, app, work).items()}}
                    results[name].append(figures)
                    print(f"round {round_ + 1} {name}: "
                          + " ".join(f"{k}={v:.2f}" for k, v in figures.items()), flush=True)
    print(f"load average after: {os.getloadavg()}")
    print("medians:")
    for name, runs in results.items():
        keys = runs[0].keys()
        medians = {k: statistics.median(r[k] for r in runs if k in r) for k in keys}
        print(f"  {name:12s} " + " ".join(f"{k}={v:.2f}" for k, v in medians.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
