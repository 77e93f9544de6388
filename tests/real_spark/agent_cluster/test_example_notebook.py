"""examples/notebooks/shared-cluster.ipynb, run as a user runs it: every cell in a real Jupyter
kernel (nbclient + ipykernel) against the real server and 6-core cluster. The notebook's own
``watch`` cells raise when the split they wait for does not come (1:2 by priority, then 1:1
after the raise), so a clean run is the behaviour the notebook promises."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from sessionsched.client import SchedulerClient
from tests.sparkcluster import SLACK, spark_env, wait_until

pytestmark = pytest.mark.cluster

NOTEBOOK = Path(__file__).resolve().parents[3] / "examples" / "notebooks" / "shared-cluster.ipynb"
SESSIONS = ("notebook-a", "notebook-b")


def printed(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o["output_type"] == "stream")


def test_the_shared_cluster_notebook_runs_and_shows_its_splits(server, agent_cluster,
                                                               tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=SLACK * 300,
                            resources={"metadata": {"path": str(tmp_path)}})
    api = SchedulerClient(server.url)
    try:
        client.execute(env={**spark_env(), "SESSIONSCHED_SERVER": server.url})
    except CellExecutionError as e:
        pytest.fail(f"the notebook failed: {str(e)[-2000:]}")
    finally:
        # A failed run may leave sessions open: end them (their agents stop their drivers).
        for app in api.apps():
            if app.name in SESSIONS and not app.state.terminal:
                api.kill(app.id)
        wait_until(lambda: not agent_cluster.status().apps, 90, "the notebook's apps to leave")
        api.close()

    out = "\n".join(printed(c) for c in nb.cells if c.cell_type == "code")
    splits = [(int(a), int(b)) for a, b in
              re.findall(r"\{'notebook-a': (\d+), 'notebook-b': (\d+)\}", out)]
    assert (2, 4) in splits  # priorities 5000 and 10000 on 6 executors
    assert splits[-1] == (3, 3)  # after A's raise to 10000
    assert printed(nb.cells[-1]).strip().endswith("FINISHED")
