"""A notebook session on the real cluster and server: it waits in its queue (position shown),
gets executors for a job, gives them back when idle, gets them again on demand, and ends on
``spark.stop()``. The notebook is a real Python process (``apps/notebook_session.py``).

Beside it, in another queue, a static app (dynamic allocation off: no allocation manager for
its agent to cap) runs admission-only to its end: its agent's probe says so, once."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from agent_stack import finished, report, submit

from tests.sparkcluster import spark_env, wait_until

pytestmark = pytest.mark.cluster

NOTEBOOK = Path(__file__).parent / "apps" / "notebook_session.py"


class Notebook:
    """The notebook process; its STEP lines and stderr collected as they come."""

    def __init__(self, server: str, queue: str):
        self.steps: dict[str, dict[str, str]] = {}
        self.stderr: list[str] = []
        self.proc = subprocess.Popen([sys.executable, str(NOTEBOOK), server, queue],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=spark_env(),
                                     start_new_session=True)
        threading.Thread(target=self._read_steps, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_steps(self):
        for line in self.proc.stdout:
            if line.startswith("STEP "):
                name, *pairs = line.split()[1:]
                self.steps[name] = dict(p.split("=", 1) for p in pairs)

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr.append(line)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


def test_a_notebook_session_waits_its_turn_shares_and_gives_back_beside_a_static_app(
        api, server, agent_cluster):
    # A static app: no allocation manager to cap. The agent says so and the app runs as is.
    static = submit(api, "static-a", "root.fair", 5000, "--tasks", 2, "--seconds", 2,
                    conf={"spark.dynamicAllocation.enabled": "false", "spark.cores.max": "2"})
    # The queue runs one app at a time: the notebook waits behind a running app. The notebook
    # (a Python process importing pyspark) starts while the blocker's driver does; submitted
    # after the blocker, the session is behind it in the fifo queue either way.
    blocker = submit(api, "blocker", "root.solo", 5000, "--tasks", 1, "--seconds", 600)
    nb = Notebook(server.url, "root.solo")
    try:
        wait_until(lambda: api.app(blocker).state.value == "RUNNING", 120, "the blocker to run")
        session = wait_until(
            lambda: next((a for a in api.apps() if a.kind == "session"), None), 60,
            "the session app")
        api.submitted.append(session.id)
        wait_until(lambda: api.app(session.id).position == 1, 30, "position 1 in root.solo")
        wait_until(lambda: any("position 1" in line for line in nb.stderr), 30,
                   "the progress display to show the position")
        api.kill(blocker)

        wait_until(lambda: "admitted" in nb.steps, 120, "admission after the blocker ended")
        assert nb.steps["admitted"] == {"app": session.id, "master": agent_cluster.master_url}
        wait_until(lambda: api.app(session.id).executors > 0, 90, "executors for the job")
        wait_until(lambda: "job1" in nb.steps, 120, "the first job")
        assert nb.steps["job1"]["result"] == "3"  # 0 + 1 + 2

        # Idle: Spark's idle timeout (3 s) gives every executor back, and the books agree.
        wait_until(lambda: "idle" in nb.steps, 120, "the idle notebook to release executors")
        assert nb.steps["idle"]["executors"] == "0"
        wait_until(lambda: api.app(session.id).executors == 0, 30, "the books to show 0")
        nb.proc.stdin.write("go\n")
        nb.proc.stdin.flush()
        # ...and the next job gets executors again.
        wait_until(lambda: "job2" in nb.steps, 120, "the second job")
        assert nb.steps["job2"]["result"] == "1"

        wait_until(lambda: "stopped" in nb.steps, 60, "spark.stop()")
        ended = wait_until(lambda: api.app(session.id).state.terminal and api.app(session.id),
                           30, "the session to end")
        assert ended.state.value == "FINISHED"
        assert nb.proc.wait(60) == 0
    finally:
        nb.stop()

    done = wait_until(lambda: finished(api, static), 180, "the static app to finish")
    assert (done.state.value, done.exit_code) == ("FINISHED", 0)
    assert report(api, static)["result"] == 1
    agent = [e["detail"] for e in api.events(static) if e["kind"] == "agent"]
    assert len(agent) == 1
    assert "control admission-only" in agent[0]
    assert "executorAllocationManager() is empty: dynamic allocation is off" in agent[0]
