"""The driver of a Livy interactive session (``doors/livy/interactive.py`` starts it): a
notebook session (``notebook.Session``) that takes its statements from the scheduler.

``python -m sessionsched.drivers.livy_repl --server URL --app-id ID --session N [--name NAME]
[--conf JSON]``:

1. waits for the session app's admission in its queue, then builds its SparkSession with
   dynamic allocation and the agent attached, exactly as ``sessionsched.session()`` does
   (so an idle session gives its executors back);
2. says it is ready (``POST /livy-repl/N/ready``), then polls ``GET /livy-repl/N/next`` for a
   statement, runs it and posts its output (``POST /livy-repl/N/result``) in Livy's shape:
   ``{"status": "ok", "execution_count", "data": {"text/plain": ...}}`` (what it printed, and
   the value of a last expression, as Python's REPL shows it) or ``{"status": "error",
   "ename", "evalue", "traceback"}``;
3. ends (Spark stopped, the session app ended) on ``{"stop": true}``, or when the scheduler has
   not answered for ``GONE_S`` seconds.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import ssl
import sys
import time
import traceback

import httpx

from ..client import CA_ENV, TOKEN_ENV, SchedulerClient
from .notebook import Session

POLL_S = 0.2
GONE_S = 60.0
ADMISSION_WAIT_S = 7 * 24 * 3600.0


def run_code(code: str, scope: dict, count: int) -> dict:
    """Run one statement in ``scope``; Livy's output object."""
    out = io.StringIO()
    try:
        tree = ast.parse(code, mode="exec")
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            exec(compile(tree, "<stdin>", "exec"), scope)  # noqa: S102 - the session's purpose
            if last is not None:
                value = eval(compile(ast.Expression(last.value), "<stdin>", "eval"), scope)
                if value is not None:
                    print(repr(value))
    except BaseException as e:  # noqa: BLE001 - the user's error is the statement's output
        if isinstance(e, KeyboardInterrupt | SystemExit):
            raise
        lines = traceback.format_exception(type(e), e, e.__traceback__)
        return {"status": "error", "execution_count": count, "ename": type(e).__name__,
                "evalue": str(e), "traceback": lines}
    return {"status": "ok", "execution_count": count,
            "data": {"text/plain": out.getvalue().rstrip("\n")}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="sessionsched.drivers.livy_repl")
    p.add_argument("--server", required=True)
    p.add_argument("--app-id", required=True)
    p.add_argument("--session", type=int, required=True)
    p.add_argument("--name", default="livy-session")
    p.add_argument("--conf", default="{}")
    a = p.parse_args(argv)
    conf = {str(k): str(v) for k, v in json.loads(a.conf).items()}
    # With auth mode tokens the server gives this process its app's secret, and the CA of a
    # private-CA HTTPS server (server.tls.ca), in its environment.
    token = os.environ.get(TOKEN_ENV) or None
    ca = os.environ.get(CA_ENV) or None
    client = SchedulerClient(a.server, token, ca=ca)
    session = Session(client, a.app_id, a.server, token)
    try:
        session.wait_for_admission(ADMISSION_WAIT_S, None)
        session.start_spark(a.name, conf)
    except BaseException:
        session._abandon()
        raise
    base = f"{a.server}/livy-repl/{a.session}"
    spark = session.spark
    scope = {"spark": spark, "sc": spark.sparkContext, "__name__": "__main__"}
    http = httpx.Client(timeout=30, headers={"Authorization": f"Bearer {token}"} if token
                        else {}, verify=ssl.create_default_context(cafile=ca) if ca else True)
    heard = time.monotonic()
    try:
        http.post(f"{base}/ready").raise_for_status()
        while time.monotonic() - heard < GONE_S:
            try:
                r = http.get(f"{base}/next")
                r.raise_for_status()
                todo = r.json()
            except httpx.HTTPError:
                time.sleep(1.0)
                continue
            heard = time.monotonic()
            if todo.get("stop"):
                break
            if todo.get("id") is None:
                time.sleep(POLL_S)
                continue
            output = run_code(todo["code"], scope, todo["id"])
            http.post(f"{base}/result", json={"id": todo["id"], "output": output})
            heard = time.monotonic()  # a statement may run far longer than GONE_S
    finally:
        session.stop(exit_code=0)
        http.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
