"""What the standalone and Kubernetes backends keep on disk about each driver they launched,
so that a new backend instance (after a scheduler restart) can find it again:
``<run_dir>/<app_id>.json`` (``DriverRecord``) next to ``<app_id>.exit`` (written by the
runner when the process it ran ends).

The record is written at launch and rewritten when something is learnt (the Spark
application id, the cluster driver id of a cluster-mode submission, a driver pod), atomically.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class DriverRecord:
    app_id: str
    # "process": a client-mode driver (or a cluster-mode spark-submit); "cluster-driver": a
    # driver the cluster runs (standalone: on a worker; Kubernetes: a pod); "external": an app
    # the backend was told about (``manage``), kept in memory only.
    kind: str
    launched_at: float
    process: str | None = None  # ProcessId as text: the process this host runs
    log_path: str | None = None
    exit_path: str | None = None
    driver_id: str | None = None  # the master's driver id (cluster deploy mode)
    spark_app_id: str | None = None
    submitter: bool = False  # the process is spark-submit in cluster mode, not the driver


def record_path(run_dir: Path, app_id: str) -> Path:
    return run_dir / f"{app_id}.json"


def save(run_dir: Path, record: DriverRecord) -> None:
    path = record_path(run_dir, record.app_id)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(asdict(record), indent=1))
    os.replace(tmp, path)


def load(run_dir: Path, app_id: str) -> DriverRecord | None:
    """The record, or None if there is none or it cannot be read."""
    try:
        data = json.loads(record_path(run_dir, app_id).read_text())
        return DriverRecord(**data)
    except (OSError, ValueError, TypeError):
        return None


def read_exit_code(path: str | Path | None) -> int | None:
    """The exit code the runner wrote, or None if the driver has not ended (or no file)."""
    if not path:
        return None
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None
