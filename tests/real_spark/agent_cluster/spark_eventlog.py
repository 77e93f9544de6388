"""What Spark's own records say an app's executors did, over the app's whole life: its event
log (``spark.eventLog.enabled``), the record Spark's history server rebuilds its status store
from, read once the app has ended (the live status store, read by the app itself before its
SparkContext stops, misses the executors' last seconds: they go with the stop).

- ``held_core_s``: each executor's cores x from its ``SparkListenerExecutorAdded`` to its
  first ``SparkListenerExecutorRemoved`` or the ``SparkListenerApplicationEnd``, whichever is
  first (executors the stop takes down are not always logged as removed, and when they are,
  after the application's end). A decommissioned executor is logged removed twice: when its
  driver drops it, its decommission done ("Executor decommission"), and when the master
  reports its process's exit ("Command exited with code 0", up to 3 s later on the loaded
  test machine); the status store's ``removeTime`` is the first, and so is this figure;
- ``exit_after_removal_core_s``: cores x from the first removal to the last (the process's
  exit): held on the worker, in neither figure;
- ``task_s``: every task attempt's run time (launch to finish), failed ones included;
- ``lost_task_s``: the run time of the attempts that ended with ``ExecutorLostFailure`` (their
  executor killed under them);
- ``executors``: how many there were.

The app runs with ``spark.standalone.executorRemoveDelayOnDisconnection=0s`` so that these
records end a killed executor, and its tasks, when it is gone. By default (5 s) a standalone
driver that loses an executor's connection waits 5 s for the master's word on why before it
removes the executor and fails its tasks; for an executor the app itself asked to kill (a
reclaim) that word never comes (the master dropped the executor at the request: "Got status
update for unknown executor" in its log), so Spark's records would run every killed executor
and its task 5 s past its death, while its core already runs another app's executor
(docs/operator/usage.md, "Checked against Spark's own figures").
"""

from __future__ import annotations

import json
from pathlib import Path


def event_log_conf(directory: Path) -> dict[str, str]:
    """One plain JSON file per app (Spark 4 rolls and compresses event logs by default), with
    a lost executor removed when its connection drops (see above)."""
    directory.mkdir(parents=True, exist_ok=True)
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": directory.as_uri(),
            "spark.eventLog.rolling.enabled": "false", "spark.eventLog.compress": "false",
            "spark.standalone.executorRemoveDelayOnDisconnection": "0s"}


def spark_usage(directory: Path, spark_app_id: str) -> dict:
    """The figures of the ended app ``spark_app_id`` from its event log in ``directory``."""
    (path,) = [p for p in directory.iterdir() if p.name.startswith(spark_app_id)]
    added: dict[str, tuple[float, int]] = {}
    removed: dict[str, float] = {}
    exited: dict[str, float] = {}
    task_s = lost_s = 0.0
    end = None
    for line in path.read_text().splitlines():
        ev = json.loads(line)
        kind = ev["Event"]
        if kind == "SparkListenerExecutorAdded" and ev["Executor ID"] != "driver":  # local
            added[ev["Executor ID"]] = (ev["Timestamp"] / 1000,
                                       ev["Executor Info"]["Total Cores"])
        elif kind == "SparkListenerExecutorRemoved":
            removed.setdefault(ev["Executor ID"], ev["Timestamp"] / 1000)
            exited[ev["Executor ID"]] = ev["Timestamp"] / 1000
        elif kind == "SparkListenerTaskEnd":
            info = ev["Task Info"]
            run_s = (info["Finish Time"] - info["Launch Time"]) / 1000
            task_s += run_s
            if ev["Task End Reason"].get("Reason") == "ExecutorLostFailure":
                lost_s += run_s
        elif kind == "SparkListenerApplicationEnd":
            end = ev["Timestamp"] / 1000
    assert end is not None, f"{path} has no application end: the app has not ended"
    held = sum(cores * (min(removed.get(eid, end), end) - at)
               for eid, (at, cores) in added.items())
    after = sum(added[eid][1] * (min(exited[eid], end) - min(at, end))
                for eid, at in removed.items() if eid in added)
    return {"held_core_s": round(held, 3), "task_s": round(task_s, 3),
            "lost_task_s": round(lost_s, 3), "executors": len(added),
            "exit_after_removal_core_s": round(after, 3)}
