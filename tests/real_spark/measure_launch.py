"""How long a trivial client-mode PySpark app takes through the standalone backend, on this
machine: from ``launch`` to DriverStarted (Spark app id learnt), to the first executor in the
cluster's view, and to DriverExited.

    .venv/bin/python -m tests.real_spark.measure_launch [--runs N]

Starts its own local cluster (1 worker, 2 cores, 2g) on free ports in 17000-17999, runs the
apps one after another (a 1-task job of 0.1 s, dynamic allocation on, 1-core/512m executors),
prints each run and the medians, and stops everything it started.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from sessionsched.backends.base import Launch
from sessionsched.backends.local import LocalCluster
from sessionsched.engine.events import DriverExited, DriverStarted, ExecutorsChanged
from tests.sparkcluster import APP_SOURCE, DYNAMIC, SMALL, master_ports

POLL_S = 0.1
TIMEOUT_S = 300


def measure(backend, app: Path, app_id: str) -> tuple[float, float, float]:
    launched = time.time()
    backend.launch(Launch(app_id, "measure", argv=(str(app), "--tasks", "1", "--task-s", "0.1"),
                          conf={**SMALL, **DYNAMIC}))
    started = executor = None
    while time.time() - launched < TIMEOUT_S:
        now = time.time()
        for e in backend.poll(now):
            if isinstance(e, DriverStarted) and e.app_id == app_id:
                started = now - launched
            elif isinstance(e, ExecutorsChanged) and e.app_id == app_id and e.executors:
                executor = executor or now - launched
            elif isinstance(e, DriverExited) and e.app_id == app_id:
                if e.exit_code != 0:
                    raise SystemExit(f"{app_id} failed with exit code {e.exit_code}")
                return started, executor, now - launched
        time.sleep(POLL_S)
    backend.stop(app_id)
    raise SystemExit(f"{app_id} did not finish within {TIMEOUT_S}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from sessionsched.backends.standalone import StandaloneBackend

    with tempfile.TemporaryDirectory(prefix="measure-launch-") as tmp:
        app = Path(tmp) / "app.py"
        app.write_text(APP_SOURCE)
        port, rest_port, ui_port = master_ports()
        cluster = LocalCluster(Path(tmp) / "cluster", workers=1, cores=2, memory="2g",
                               port=port, ui_port=ui_port, rest_port=rest_port)
        cluster.start()
        backend = StandaloneBackend(cluster.master_url, cluster.master_ui, Path(tmp) / "run",
                                    rest_url=cluster.rest_url)
        try:
            rows = []
            for i in range(args.runs):
                row = measure(backend, app, f"driver-{i}")
                rows.append(row)
                print(f"run {i + 1}: DriverStarted {row[0]:.1f}s  first executor {row[1]:.1f}s"
                      f"  DriverExited {row[2]:.1f}s")
            medians = [statistics.median(col) for col in zip(*rows, strict=True)]
            print(f"median of {args.runs}: DriverStarted {medians[0]:.1f}s  first executor "
                  f"{medians[1]:.1f}s  DriverExited {medians[2]:.1f}s")
        finally:
            backend.close()
            cluster.stop()


if __name__ == "__main__":
    main()
