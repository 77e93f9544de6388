"""How close the simulator comes to a real day it is given the event logs of.

    python benchmarks/eventlog_fidelity.py [--cores 4] [--ports 47000-47999] [--out FILE.json]
                                           [--keep DIR | --reuse DIR] [--host-cpus N]

Not a test. Real parts only, all on 127.0.0.1: a local standalone cluster from pyspark's Spark
(1 worker of ``--cores`` cores; the tasks sleep, so it may advertise more cores than the
machine has), ``sessionsched serve`` on it (two ``fairshare`` queues, 3 driver slots), and
``APPS``: nine small PySpark apps (examples/apps/sleep_tasks.py, 1-core executors, dynamic
allocation) of different sizes and priorities in both queues, one a burst of four submitted
at once, each writing a zstd event log. Then ``sessionsched workload from-eventlogs`` builds
the workload from those logs with the same server config and the cluster's shape (each app's
``submit`` its submission, which sessionsched stamped into its properties; the cluster's
latencies fitted from the logs; ``--host-cpus``: this machine's CPU count unless given (0:
not given), the CPUs every driver and executor started on, which their starts share), and
``sessionsched simulate --config`` runs it under that config. ``--keep DIR`` saves the real
run (logs, times, config, the scheduler's database and log, the drivers' logs) and ``--reuse
DIR`` simulates a saved one again without Spark.

Printed per app, in seconds from the first submission: real and simulated launch (the
scheduler's ``started_at``: its driver launched), first executor and end, and
``|simulated - real|``; its completion (submission to end), real and simulated, and the
error as a share of the real one; per figure the median and the worst; the makespan (the
last end) and its error; whether the apps were launched in the same order. Three times:
without what ``from-eventlogs`` fitted from the logs (the simulator's default latencies, no
driver work between or after stages, no executor warm-up, no shared CPUs), as built, and as
built with ``--calibrate``.
Everything started here is stopped by PID, also on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
APP = ROOT / "examples" / "apps" / "sleep_tasks.py"
sys.path.insert(0, str(HERE.parent))

from real_cluster import free_ports, master_port, wait_for  # noqa: E402

APP_CONF = {
    "spark.executor.cores": "1", "spark.executor.memory": "512m", "spark.driver.memory": "512m",
    "spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1",
    "spark.dynamicAllocation.enabled": "true",
    "spark.dynamicAllocation.shuffleTracking.enabled": "true",
    "spark.dynamicAllocation.executorIdleTimeout": "5s",
    "spark.eventLog.enabled": "true", "spark.eventLog.compress": "true",
    "spark.eventLog.compression.codec": "zstd", "spark.eventLog.rolling.enabled": "false",
}
# (seconds after the first submission, name, queue, priority, stages, maxExecutors or None)
APPS = (
    (0, "etl-big", "root.etl", 5000, "24x3", None),
    (0, "etl-mid", "root.etl", 3000, "12x2", 3),
    (8, "adhoc-query", "root.adhoc", 8000, "4x1", 2),
    *((20, f"burst-{i}", "root.adhoc", 5000, "2x1", 1) for i in range(1, 5)),
    (26, "etl-late", "root.etl", 2000, "8x2", 2),
    (30, "adhoc-report", "root.adhoc", 6000, "6x2", 2),
)
FIGURES = ("launched", "first_executor", "finished")


def server_config(cluster, api_port: int, work: Path) -> dict:
    return {
        "server": {"port": api_port, "cycle_ms": 200, "state_dir": str(work / "state")},
        "cluster": {"backend": "standalone", "master": cluster.master_url,
                    "master_ui": cluster.master_ui, "driver_slots": 3},
        "defaults": {"queue": "root.etl"},
        "queues": [{"name": "root", "queues": [
            {"name": "etl", "policy": "fairshare"},
            {"name": "adhoc", "policy": "fairshare", "weight": 2},
        ]}],
    }


def run_real(cores: int, ports: tuple[int, int], work: Path, logs: Path) -> tuple[dict, dict]:
    """Runs ``APPS`` through the scheduler; (the server config, name -> real times)."""
    from sessionsched.backends.local import LocalCluster
    from sessionsched.client import SchedulerClient, Submission
    from sessionsched.commands._serverproc import ServerProcess

    first, last = ports
    port = master_port(first, last)
    ui, worker_rpc, worker_ui, api_port = free_ports(port + 2, last, 4)
    cluster = LocalCluster(work / "cluster", workers=1, cores=cores, memory="8g", port=port,
                           rest_port=port + 1, ui_port=ui, start_timeout_s=180,
                           worker_ports=(worker_rpc, worker_ui))
    cluster.start()
    server = api = None
    try:
        config = server_config(cluster, api_port, work)
        server = ServerProcess.start(config, work / "server")
        api = SchedulerClient(server.url)
        ids: dict[str, str] = {}
        t0 = time.monotonic()
        for at, name, queue, priority, stages, max_executors in APPS:
            time.sleep(max(0.0, t0 + at - time.monotonic()))
            conf = {**APP_CONF, "spark.eventLog.dir": logs.as_uri(),
                    "spark.sessionsched.queue": queue, "spark.ego.priority": str(priority)}
            if max_executors:
                conf["spark.dynamicAllocation.maxExecutors"] = str(max_executors)
            argv = ["--name", name, *[a for k, v in conf.items() for a in ("--conf", f"{k}={v}")],
                    str(APP), "--stages", stages]
            ids[name] = api.submit(Submission(tuple(argv), str(APP.parent))).id
            print(f"  {time.monotonic() - t0:5.1f}s submitted {name}", file=sys.stderr)

        def all_ended():
            apps = {n: api.app(i) for n, i in ids.items()}
            return apps if all(a.state.terminal for a in apps.values()) else None

        apps = wait_for(all_ended, 1800, "every app to end", interval_s=1.0)
        bad = [n for n, a in apps.items() if a.state.value != "FINISHED"]
        if bad:
            raise RuntimeError(f"not FINISHED: {bad} (server log: {server.log_path})")
        start = min(a.submitted_at for a in apps.values())
        real = {n: {"t0_epoch": start.timestamp(),
                    "submitted": (a.submitted_at - start).total_seconds(),
                    "launched": (a.started_at - start).total_seconds(),
                    "first_executor": (a.first_executor_at - start).total_seconds()
                    if a.first_executor_at else None,
                    "finished": (a.finished_at - start).total_seconds()}
                for n, a in apps.items()}
        return config, real
    finally:
        if api is not None:
            for app in api.apps():
                if not app.state.terminal:
                    api.kill(app.id)
            api.close()
        if server is not None:
            server.stop()
        cluster.stop()


FITTED = ("driver_start_s", "executor_start_s", "executor_idle_timeout_s", "host_cpus")


def simulated(config: dict, real: dict, cores: int, work: Path, logs: Path,
              fitted: bool = True, calibrate: bool = False, host_cpus: float = 0) -> dict:
    """The workload ``from-eventlogs`` builds from the logs (``--calibrate`` with
    ``calibrate``), simulated under ``config``; with ``fitted`` False, without what it fitted
    from them (the cluster's latencies, the drivers' own work between and after stages): the
    simulator's defaults."""
    from sessionsched.cli import main
    from sessionsched.sim import simulate
    from sessionsched.sim.replay import replay

    config_path, day = work / "server.yaml", work / "day.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    if main(["workload", "from-eventlogs", str(logs), "-o", str(day), "--config",
             str(config_path), "--cluster", f"workers=1,cores={cores},memory=8g",
             *(["--host-cpus", f"{host_cpus:g}"] if host_cpus else []),
             *(["--calibrate"] if calibrate else [])]) != 0:
        raise RuntimeError("no workload from the logs")
    data = yaml.safe_load(day.read_text())
    for app in data["apps"]:  # the stamped submission is the real one
        assert abs(app["submit"] - real[app["name"]]["submitted"]) < 0.5, app["name"]
    if not fitted:
        for key in FITTED:
            data["cluster"].pop(key, None)
        for app in data["apps"]:
            app.pop("tail_s", None)
            app.pop("warmup_s", None)
            for stage in app["stages"]:
                stage.pop("gap_s", None)
        day.write_text(yaml.safe_dump(data, sort_keys=False))
    result = simulate(replay(day, config_path).workload)
    return {a.name: {"submitted": a.submitted, "launched": a.admitted,
                     "first_executor": a.first_executor, "finished": a.finished}
            for a in result.apps}


def admission_order(times: dict) -> list[str]:
    return [n for n, _ in sorted(times.items(), key=lambda kv: (kv[1]["launched"], kv[0]))]


def report(real: dict, sim: dict) -> dict:
    def f(x):
        return "-" if x is None else f"{x:7.1f}"

    print(f"{'app':14} " + " ".join(f"{k:>29}" for k in FIGURES) + f"{'completion':>26}")
    print(f"{'':14} " + " ".join(f"{'real':>9}{'sim':>9}{'|err|':>11}" for _ in FIGURES)
          + f"{'real':>9}{'sim':>9}{'|err|':>8}")
    errors: dict[str, list[float]] = {k: [] for k in (*FIGURES, "completion")}
    for name, r in real.items():
        s = sim[name]
        cells = []
        for k in FIGURES:
            err = None if r[k] is None or s[k] is None else abs(s[k] - r[k])
            if err is not None:
                errors[k].append(err)
            cells.append(f"  {f(r[k])}  {f(s[k])}    {f(err)}")
        took = r["finished"] - r["submitted"]
        sim_took = None if s["finished"] is None else s["finished"] - s["submitted"]
        rel = None if sim_took is None else abs(sim_took - took) / took
        errors["completion"].append(1.0 if rel is None else rel)
        cells.append(f"  {f(took)}  {f(sim_took)}  {'-' if rel is None else f'{rel:5.0%}'}")
        print(f"{name:14} " + " ".join(cells))
    out = {}
    for k, errs in errors.items():
        out[k] = {"median": round(statistics.median(errs), 3), "worst": round(max(errs), 3)}
        unit = "" if k == "completion" else " s"
        print(f"{k}: |error| median {out[k]['median']:g}{unit}, worst {out[k]['worst']:g}{unit}"
              + (" (of the real completion: submission to end)" if k == "completion" else ""))
    real_end = max(r["finished"] for r in real.values())
    sim_end = max(s["finished"] for s in sim.values() if s["finished"] is not None)
    out["makespan"] = {"real": round(real_end, 2), "sim": round(sim_end, 2),
                       "error": round(sim_end - real_end, 2),
                       "relative": round((sim_end - real_end) / real_end, 3)}
    print(f"makespan: real {real_end:.1f} s, simulated {sim_end:.1f} s, error "
          f"{sim_end - real_end:+.1f} s ({(sim_end - real_end) / real_end:+.0%})")
    order_real, order_sim = admission_order(real), admission_order(sim)
    out["admission_order_same"] = order_real == order_sim
    print("admission order: " + ("the same" if order_real == order_sim else
                                 f"differs: real {order_real}, simulated {order_sim}"))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cores", type=int, default=4)
    p.add_argument("--ports", default="47000-47999")
    p.add_argument("--out", help="write the figures as JSON here")
    p.add_argument("--keep", metavar="DIR", help="save the real run (its event logs, times, "
                   "server config, the scheduler's database and log, the drivers' logs) in "
                   "DIR, for --reuse")
    p.add_argument("--reuse", metavar="DIR", help="no real run: the one --keep saved in DIR")
    p.add_argument("--host-cpus", type=float, default=None, metavar="N",
                   help="the CPUs the real run's JVMs started on (default: this machine's, or "
                   "what --keep saved; 0: the model without)")
    args = p.parse_args()
    first, _, last = args.ports.partition("-")
    with tempfile.TemporaryDirectory(prefix="eventlog-fidelity-") as tmp:
        work = Path(tmp)
        logs = work / "logs"
        print(f"work directory {work}", file=sys.stderr)
        if args.reuse:
            saved = json.loads((Path(args.reuse) / "real.json").read_text())
            config, real, args.cores = saved["config"], saved["real"], saved["cores"]
            if args.host_cpus is None:
                args.host_cpus = saved.get("host_cpus")
            shutil.copytree(Path(args.reuse) / "logs", logs)
        else:
            logs.mkdir()
            config, real = run_real(args.cores, (int(first), int(last)), work, logs)
            if args.keep:
                keep = Path(args.keep)
                keep.mkdir(parents=True, exist_ok=True)
                shutil.copytree(logs, keep / "logs", dirs_exist_ok=True)
                # the scheduler's own record of the day (its reclaims, launches, states), and
                # the drivers' logs (each agent logs the grants it was given)
                for kept in (work / "state" / "sessionsched.db", work / "server" / "server.log"):
                    if kept.exists():
                        shutil.copy2(kept, keep / kept.name)
                if (work / "state" / "logs").is_dir():
                    shutil.copytree(work / "state" / "logs", keep / "driver-logs",
                                    dirs_exist_ok=True)
                (keep / "real.json").write_text(json.dumps(
                    {"config": config, "real": real, "cores": args.cores,
                     "host_cpus": os.cpu_count()}, indent=2) + "\n")
        cpus = os.cpu_count() if args.host_cpus is None else args.host_cpus
        print(f"host CPUs {cpus:g}" if cpus else "host CPUs not given", file=sys.stderr)
        print("\nwithout the fitted constants (the simulator's defaults)")
        defaults = simulated(config, real, args.cores, work, logs, fitted=False)
        figures_defaults = report(real, defaults)
        print("\nas built, with the constants fitted from the logs")
        sim = simulated(config, real, args.cores, work, logs, host_cpus=cpus)
        figures = report(real, sim)
        print("\nas built with --calibrate (executor_start_s by simulation)")
        calibrated = simulated(config, real, args.cores, work, logs, calibrate=True,
                               host_cpus=cpus)
        figures_calibrated = report(real, calibrated)
        print("\n".join(line for line in (work / "day.yaml").read_text().splitlines()
                        if line.startswith("#   ")))
    if args.out:
        Path(args.out).write_text(json.dumps(
            {"real": real, "sim": sim, "figures": figures, "sim_defaults": defaults,
             "figures_defaults": figures_defaults, "sim_calibrated": calibrated,
             "figures_calibrated": figures_calibrated},
            indent=2) + "\n")


if __name__ == "__main__":
    main()
