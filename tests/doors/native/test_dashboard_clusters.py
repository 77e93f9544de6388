"""The dashboard behind several clusters, in a real headless Chromium (tests/support/browser.py):
a scheduler over two memory clusters (docs/operator/clusters.md) shows each app's cluster in
the apps table and on its page, a row per cluster in the cluster view and each one's
reachability in the health line; with one cluster none of it is there."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sessionsched.commands._serverproc import ServerProcess
from tests.support.browser import WAIT_MS, api, cell, submit

pytestmark = pytest.mark.browser  # chromium: left out of make test-fast


@pytest.fixture
def two_clusters(tmp_path):
    """A on-premises cluster a of 4 cores, b of 8: apps spill from a to b."""
    # work_s: the app's work outlasts any page load (it must still be running when the cluster
    # rows are read; the default 2 s was over before a slow machine's page came up).
    memory = {"backend": "memory", "memory": "8g", "driver_start_s": 0.2,
              "executor_start_s": 0.2, "work_s": 3600}
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 100},
        "clusters": [{"name": "a", "cores": 4, **memory}, {"name": "b", "cores": 8, **memory}],
        "queues": [{"name": "root", "queues": [{"name": "default"}]}],
    }
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        yield server
    finally:
        server.stop()


def test_each_apps_cluster_each_cluster_and_their_reachability_are_shown(two_clusters,
                                                                          app_dir, tab):
    on_b = submit(two_clusters, app_dir, "on-b", 5000, queue="root.default",
                  conf={"spark.sessionsched.cluster": "b"})
    page = tab.open(f"{two_clusters.url}/")
    expect(cell(page, "apps", on_b, "Cluster")).to_have_text("b", timeout=WAIT_MS)
    expect(page.locator("#clusters")).to_be_visible()
    assert page.locator("#clusters th").all_text_contents() == [
        "Cluster", "Reachable", "Cores", "Memory", "Running", "Queued"]
    expect(page.locator("#clusters tbody td:first-child")).to_have_text(["a", "b"])
    expect(cell(page, "clusters", "b", "Cores")).to_have_text("8")
    expect(cell(page, "clusters", "b", "Running")).to_have_text("1", timeout=WAIT_MS)
    expect(page.locator("#health")).to_contain_text("clusters: a ok, b ok")
    assert api(two_clusters, f"/api/v1/apps/{on_b}")["cluster"] == "b"
    app_page = tab.open(f"{two_clusters.url}/app/{on_b}")
    expect(app_page.locator("dt", has_text="Cluster")).to_have_count(1, timeout=WAIT_MS)
    expect(app_page.locator("dt:text-is('Cluster') + dd")).to_have_text("b")
    assert tab.errors == []


def test_with_one_cluster_there_is_no_cluster_column_nor_rows(offline_server, tab):
    page = tab.open(f"{offline_server.url}/")
    expect(page.locator("#apps th").first).to_have_text("ID", timeout=WAIT_MS)
    assert "Cluster" not in page.locator("#apps th").all_text_contents()
    expect(page.locator("#clusters")).to_be_hidden()
    expect(page.locator("#health")).not_to_contain_text("clusters:")
    assert tab.errors == []
