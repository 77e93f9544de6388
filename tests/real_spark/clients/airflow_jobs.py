"""Airflow's real clients driven as a DAG's task would drive them, for the door tests. Runs in
the Airflow virtualenv (``airflow_venv``), never in the project's; prints one JSON line.

``spark JAR CLASS [ARGS...]``: ``SparkSubmitOperator.execute`` in cluster mode against the
connection ``spark_sched`` (``$AIRFLOW_CONN_SPARK_SCHED``): submit, then follow the driver to
its end; prints ``{"driver", "status", "error"}``.
``spark-kill JAR CLASS [ARGS...]``: the same, and once the driver reports RUNNING, the task is
killed (``on_kill``, as Airflow does when a task is stopped).
``livy FILE [ARGS...]``: ``LivyHook`` against ``livy_sched``: ``post_batch``, poll
``get_batch_state`` to a terminal state, ``get_batch``, ``get_batch_logs``; prints what it
saw. ``livy-kill FILE [ARGS...]``: post, wait for ``running``, ``delete_batch``.
``livy-session``: pylivy's ``LivySession`` on ``$LIVY_URL``: three statements (a Spark job,
printed output with a last expression, an error), then closed (``DELETE``).
"""

from __future__ import annotations

import json
import sys
import threading
import time

WAIT_S = 300.0
SMALL = {"spark.executor.cores": "1", "spark.executor.memory": "512m",
         "spark.driver.memory": "512m", "spark.ui.port": "0"}


def spark_operator(jar: str, main_class: str, args: list[str]):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    return SparkSubmitOperator(
        task_id="sessionsched", conn_id="spark_sched", application=jar, java_class=main_class,
        application_args=args, status_poll_interval=1,
        conf={"spark.master.rest.enabled": "true", **SMALL})


def spark(jar: str, main_class: str, *args: str, kill: bool = False) -> dict:
    op = spark_operator(jar, main_class, list(args))
    outcome: dict = {"error": None}

    def run() -> None:
        try:
            op.execute(context={})
        except Exception as e:  # noqa: BLE001 - the outcome is what the test checks
            outcome["error"] = f"{type(e).__name__}: {e}"

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    if kill:
        deadline = time.monotonic() + WAIT_S
        while op._hook is None or op._hook._driver_status != "RUNNING":
            if time.monotonic() > deadline or not worker.is_alive():
                break
            time.sleep(0.2)
        outcome["killed_while"] = op._hook._driver_status if op._hook else None
        op.on_kill()
    worker.join(WAIT_S)
    hook = op._hook
    return {**outcome, "driver": hook._driver_id if hook else None,
            "status": hook._driver_status if hook else None}


def livy(file: str, *args: str, kill: bool = False) -> dict:
    from airflow.providers.apache.livy.hooks.livy import BatchState, LivyHook

    hook = LivyHook(livy_conn_id="livy_sched")
    started = time.monotonic()
    batch_id = hook.post_batch(file=file, args=list(args), name="livy-door",
                               conf={"spark.ego.priority": "7000", **SMALL})
    seen = [hook.get_batch_state(batch_id).value]
    times = [round(time.monotonic() - started, 1)]
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        state = hook.get_batch_state(batch_id)
        if state.value != seen[-1]:
            seen.append(state.value)
            times.append(round(time.monotonic() - started, 1))
        if kill and state == BatchState.RUNNING:
            hook.delete_batch(batch_id)
            kill = False
        if state in hook.TERMINAL_STATES:
            break
        time.sleep(0.5)
    return {"id": batch_id, "states": seen, "at_s": times, "batch": hook.get_batch(batch_id),
            "logs": hook.get_batch_logs(batch_id, 0, 100)}


def livy_session() -> dict:
    """pylivy's ``LivySession`` (an interactive pyspark session) on ``$LIVY_URL``."""
    import os

    from livy import LivySession, SessionKind
    from livy.models import SparkRuntimeError

    out: dict = {}
    with LivySession.create(os.environ["LIVY_URL"], kind=SessionKind.PYSPARK, name="repl",
                            spark_conf={**SMALL, "spark.ego.priority": "6000"},
                            heartbeat_timeout=120, echo=False) as session:
        out["session"] = session.session_id
        out["count"] = session.run("spark.range(100).count()").text
        out["printed"] = session.run("x = 21\nprint('hi')\nx * 2").text
        try:
            session.run("1 / 0")
        except SparkRuntimeError as e:
            out["error"] = [e.ename, e.evalue]
        out["state_before_close"] = session.state.value
    return out


def main(argv: list[str]) -> None:
    command, rest = argv[0], argv[1:]
    if command in ("spark", "spark-kill"):
        out = spark(*rest, kill=command == "spark-kill")
    elif command in ("livy", "livy-kill"):
        out = livy(*rest, kill=command == "livy-kill")
    elif command == "livy-session":
        out = livy_session()
    else:
        raise SystemExit(f"unknown command {command!r}")
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
