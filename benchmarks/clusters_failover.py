"""Time from a standalone master's death to the next app running on the other cluster.

    python benchmarks/clusters_failover.py [--rounds 3] [--ports 27000-27999]

Real parts only: two local standalone clusters from pyspark's Spark, ``a`` and ``b`` (one
worker of 4 cores each; masters with FILESYSTEM recovery, so a killed master can start again
on its ports), ``sessionsched serve`` over both (``placement: spill``: a first), and
client-mode PySpark apps (``examples/apps/sleep_tasks.py``: one 2-core executor, one stage of
two 2-second tasks). Each round:

1. **baseline**: both masters up; an app submitted runs on a (it has room). Seconds from its
   submission to its driver's launch and to its first executor (RUNNING), as the scheduler
   recorded them (``started_at``, ``first_executor_at``).
2. **failover**: a's master is killed (SIGKILL) and an app submitted at once: seconds from the
   kill until ``/metrics`` says a is unreachable, and until the app's launch and its first
   executor, and the cluster it was placed on (b, unless it was launched on a before a's death
   was seen).
3. a's master starts again; the round ends once the scheduler sees a offer its cores again
   (its worker registered with the recovered master).

The difference between the two is the price of a master's death to the next app. Prints a
table (each round, then the medians). Everything started here is stopped by PID on exit, also
on failure or Ctrl-C. Not a test: figures only.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sessionsched.backends.local import LocalCluster  # noqa: E402
from sessionsched.backends.ports import free_port_in, port_free  # noqa: E402
from sessionsched.commands._serverproc import ServerProcess  # noqa: E402
from tests.sparkcluster import stop_server_and_its_apps  # noqa: E402

APP = Path(__file__).resolve().parents[1] / "examples" / "apps" / "sleep_tasks.py"
CONF = {"spark.executor.cores": "2", "spark.cores.max": "2", "spark.executor.memory": "512m",
        "spark.driver.memory": "512m", "spark.ui.enabled": "false"}
JVM_S = 180.0


def wait_for(cond: Callable[[], object], timeout_s: float, what: str, interval_s: float = 0.05):
    deadline = time.monotonic() + timeout_s
    while not (value := cond()):
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(interval_s)
    return value


def master_ports(ports: range, taken: set[int]) -> tuple[int, int, int]:
    """(master, REST = master + 1, UI) free now in ``ports``, none of ``taken``."""
    for p in ports:
        if {p, p + 1} & taken or not (port_free(p) and port_free(p + 1)):
            continue
        return p, p + 1, free_port_in(ports, taken | {p, p + 1})
    raise RuntimeError(f"no free master ports in {ports}")


class Rig:
    """The two clusters and the scheduler over them."""

    def __init__(self):
        self.clusters: dict[str, LocalCluster] = {}
        self.server: ServerProcess | None = None

    def start(self, work: Path, ports: range) -> None:
        taken: set[int] = set()
        for name in "ab":
            port, rest, ui = master_ports(ports, taken)
            taken |= {port, rest, ui}
            cluster = LocalCluster(work / name, workers=1, cores=4, memory="4g", port=port,
                                   ui_port=ui, rest_port=rest, start_timeout_s=JVM_S,
                                   recovery=True)
            self.clusters[name] = cluster
            cluster.start()
        config = {
            "server": {"port": free_port_in(ports, taken), "state_dir": str(work / "state"),
                       "cycle_ms": 100},
            "clusters": [{"name": n, "backend": "standalone", "master": c.master_url,
                          "master_ui": c.master_ui} for n, c in self.clusters.items()],
            "placement": "spill",
            "queues": [{"name": "root", "queues": [{"name": "default"}]}],
        }
        self.server = ServerProcess.start(config, work / "server")
        self.url = self.server.url
        wait_for(lambda: self.reachable() == {"a": True, "b": True}, 60, "both clusters")

    def gauge(self, name: str) -> dict[str, float]:
        """A per-cluster gauge of ``/metrics``: cluster -> value."""
        text = httpx.get(f"{self.url}/metrics", timeout=10).text
        return {n: float(v) for n, v in re.findall(
            rf'^sessionsched_clusters_{name}\{{cluster="(\w+)"\}} (\S+)$', text, re.M)}

    def reachable(self) -> dict[str, bool]:
        return {n: v == 1.0 for n, v in self.gauge("reachable").items()}

    def submit(self, name: str) -> str:
        argv = [a for k, v in CONF.items() for a in ("--conf", f"{k}={v}")]
        argv += [str(APP), "--stages", "2x2"]
        r = httpx.post(f"{self.url}/api/v1/apps", timeout=30,
                       json={"argv": argv, "cwd": str(APP.parent), "name": name})
        r.raise_for_status()
        return r.json()["id"]

    def app(self, app_id: str) -> dict:
        return httpx.get(f"{self.url}/api/v1/apps/{app_id}", timeout=10).json()

    def ended(self, app_id: str) -> dict:
        return wait_for(lambda: (a := self.app(app_id))["state"] in (
            "FINISHED", "FAILED", "KILLED") and a, JVM_S, f"{app_id} to end")

    def stop(self) -> None:
        if self.server is not None:
            stop_server_and_its_apps(self.server)
        for cluster in self.clusters.values():
            cluster.stop()


def at(stamp: str | None) -> float | None:
    if stamp is None:
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def since(t0: float, stamp: str | None) -> float | None:
    t = at(stamp)
    return None if t is None else round(t - t0, 2)


def one_round(rig: Rig, i: int) -> dict:
    base = rig.ended(rig.submit(f"baseline-{i}"))
    t_sub = at(base["submitted_at"])
    row = {"baseline launch": since(t_sub, base["started_at"]),
           "baseline running": since(t_sub, base["first_executor_at"]),
           "baseline on": base.get("cluster")}
    a = rig.clusters["a"]
    t0 = time.time()
    os.kill(a.process("master").pid, signal.SIGKILL)
    app_id = rig.submit(f"failover-{i}")
    wait_for(lambda: rig.reachable().get("a") is False, 60, "a said unreachable", 0.01)
    row["a unreachable"] = round(time.time() - t0, 2)
    done = rig.ended(app_id)
    row |= {"failover launch": since(t0, done["started_at"]),
            "failover running": since(t0, done["first_executor_at"]),
            "failover on": done.get("cluster"), "failover end": done["state"]}
    a.start_master()  # the round ends once a offers its worker's cores again
    wait_for(lambda: rig.gauge("cores").get("a") == 4, JVM_S, "a's cores again")
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    # Below Linux's ephemeral range (32768-60999): a killed master's port must not be taken by
    # some client's outgoing connection before it starts again there.
    p.add_argument("--ports", default="27000-27999", help="LOW-HIGH for masters and the server")
    args = p.parse_args()
    low, _, high = args.ports.partition("-")
    ports = range(int(low), int(high))
    with tempfile.TemporaryDirectory(prefix="failover-") as tmp:
        rig = Rig()
        try:
            rig.start(Path(tmp), ports)
            rows = [one_round(rig, i) for i in range(1, args.rounds + 1)]
        finally:
            rig.stop()
    keys = list(rows[0])
    print(" | ".join(["round", *keys]))
    for i, r in enumerate(rows, 1):
        print(" | ".join([str(i), *(str(r[k]) for k in keys)]))
    numeric = [k for k in keys if all(isinstance(r[k], float) for r in rows)]
    print("median | " + " | ".join(f"{k} {statistics.median(r[k] for r in rows):.2f}"
                                   for k in numeric))
    return 0


if __name__ == "__main__":
    sys.exit(main())
