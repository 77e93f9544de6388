"""What the dashboard draws from fields a cluster without GPUs never sends, drawn in a real
headless Chromium from the page's own modules: a bar per custom resource the API lists in a
queue's ``resources`` (used over its max or the cluster's capacity, its min as a tick), each
worker's custom resources, and an app's reclaims in its timeline."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.browser import WAIT_MS

pytestmark = pytest.mark.browser  # chromium: left out of make test-fast

QUEUES = [
    {"name": "root", "leaf": False, "min_share": 0, "max_cores": None, "executor_cores": 4,
     "demand_cores": 6, "executor_memory_mib": 4096, "demand_memory_mib": 6144, "pending": 0,
     "starting": 0, "running": 1, "weight": 1, "resources": {"gpu": {"used": 2, "max": None,
                                                                       "min": None}}},
    {"name": "root.ml", "leaf": True, "min_share": 0, "max_cores": None, "executor_cores": 4,
     "demand_cores": 6, "executor_memory_mib": 4096, "demand_memory_mib": 6144, "pending": 0,
     "starting": 0, "running": 1, "weight": 1, "resources": {"gpu": {"used": 2, "max": 4,
                                                                       "min": 1}}},
]
CLUSTER = {
    "reachable": True, "cluster": "cluster reachable", "cores": 8, "memory_mib": 16384,
    "workers": [{"name": "gpu-1", "cores": 4, "memory_mib": 8192, "free_cores": 0,
                 "free_memory_mib": 4096, "resources": {"gpu": 8},
                 "free_resources": {"gpu": 6}},
                {"name": "cpu-1", "cores": 4, "memory_mib": 8192, "free_cores": 4,
                 "free_memory_mib": 8192}],
    "driver_host": {"drivers": 0}, "spark_ui": None,
    "resources": {"gpu": {"capacity": 8, "used": 2, "free": 6}},
}


def test_custom_resources_get_their_own_bars_and_worker_columns(offline_server, tab):
    # The page's own reads fail (it shows itself stale): only what is drawn here is drawn.
    tab.page.route("**/api/v1/**", lambda route: route.abort())
    page = tab.open(f"{offline_server.url}/")
    expect(page.locator("body")).to_have_class("stale", timeout=WAIT_MS)
    page.evaluate("""async ([queues, cluster]) => {
        const t = document.createElement("table"); t.id = "q-test"; document.body.append(t);
        const {renderQueues} = await import("/static/queues.js");
        const {renderCluster} = await import("/static/cluster.js");
        renderQueues(t, queues, cluster.cores, cluster);
        renderCluster(cluster);
    }""", [QUEUES, CLUSTER])
    heads = page.locator("#q-test th").all_text_contents()
    assert heads[:4] == ["Queue", "Cores held", "Memory held", "gpu held"]
    ml = page.locator("#q-test tbody tr").nth(1)
    gpu = ml.locator("td[data-resource='gpu']")
    # 2 of the queue's cap of 4: half; its guarantee of 1 a quarter along.
    assert float(gpu.locator(".held").evaluate("e => parseFloat(e.style.width)")) == 50.0
    assert float(gpu.locator(".guarantee").evaluate("e => parseFloat(e.style.left)")) == 25.0
    expect(gpu.locator(".bar-label")).to_have_text("2 of cap 4")
    # The parent has no cap of it: on the scale of the cluster's 8.
    root_gpu = page.locator("#q-test tbody tr").nth(0).locator("td[data-resource='gpu']")
    expect(root_gpu.locator(".bar-label")).to_have_text("2 of cluster 8")
    memory = ml.locator("td.memory .bar-label")
    expect(memory).to_have_text("4 GiB of 16 GiB")
    # The cluster: the resource in its line, a column of it per worker (blank without).
    expect(page.locator("#cluster-line")).to_contain_text("8 gpu (2 used, 6 free)")
    assert page.locator("#workers th").all_text_contents() == [
        "Worker", "Cores", "Memory", "gpu", "Free"]
    expect(page.locator("#workers tbody tr").nth(0)).to_contain_text("2 of 8 gpu used")
    expect(page.locator("#workers tbody tr").nth(0)).to_contain_text("4 GiB, 6 gpu")
    expect(page.locator("#workers tbody tr").nth(1).locator("td[data-resource='gpu']")) \
        .to_have_text("")
    assert tab.errors == []


def test_an_apps_timeline_tells_its_reclaims_and_priority_changes(offline_server, tab):
    page = tab.open(f"{offline_server.url}/")
    items = page.evaluate("""async () => {
        const {storyOf} = await import("/static/timeline.js");
        const app = {submitted_at: "2026-11-29T08:00:00Z", first_executor_at: null,
                     gang: {executors: 4, reservation: {held_cores: 2, needed_cores: 5,
                            since: "2026-11-29T08:00:01Z", deadline: "2026-11-29T08:10:01Z"}}};
        const events = [
          {at: "2026-11-29T08:00:00Z", kind: "submitted", detail: "by alice"},
          {at: "2026-11-29T08:00:03Z", kind: "priority", detail: "5000 -> 9000"},
          {at: "2026-11-29T08:00:05Z", kind: "reclaim",
           detail: "2 executors taken back (killed now): 3, 4"}];
        return storyOf(app, events).map(it => [it.kind, it.what, it.detail]);
    }""")
    assert items == [
        ["submitted", "Submitted", "by alice"],
        ["gang-reserved", "Gang reservation began", "2 of 5 cores reserved so far"],
        ["priority", "Priority changed", "5000 -> 9000"],
        ["reclaim", "Executors taken back", "2 executors taken back (killed now): 3, 4"],
    ]
    assert tab.errors == []
