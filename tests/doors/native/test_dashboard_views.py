"""The dashboard's views in a real headless Chromium (tests/support/browser.py): the queue bars
against the API's figures on a memory cluster whose apps run and hold executors; the apps
table narrowed by its filters and its search, its first rows only and more on demand; an
app's page telling its events in order, who is ahead of it, and what a running app's
executors wait for; and every request the pages make staying on the scheduler's own
origin."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, expect

from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import wait_until
from tests.support.browser import (
    HOSTILE,
    LONG,
    WAIT_MS,
    api,
    cell,
    row,
    submit,
)
from tests.support.cli_helpers import TWO_GPU_EXECUTORS, gpu_memory_config
from tests.support.http_client import HTTP

pytestmark = pytest.mark.browser  # chromium: left out of make test-fast


def bar_widths(page: Page) -> dict[str, tuple[float, float]]:
    """Each queue's (held, wanted) bar widths, in per cent of its bar, as the page set them."""
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll(
        "#queues tbody tr")].map(tr => [tr.cells[0].textContent, [
          parseFloat(tr.querySelector(".bar .held").style.width),
          parseFloat(tr.querySelector(".bar .demand").style.width)]]))""")


def memory_widths(page: Page) -> dict[str, tuple[float, float]]:
    """Each queue's (held, wanted) memory bar widths, in per cent of its bar."""
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll(
        "#queues tbody tr")].map(tr => [tr.cells[0].textContent, [
          parseFloat(tr.querySelector(".memory .bar .held").style.width),
          parseFloat(tr.querySelector(".memory .bar .demand").style.width)]]))""")


def expected_widths(server: ServerProcess) -> dict[str, tuple[float, float]]:
    """The same from the API: of the queue's cap, else of the cluster's cores."""
    cores = api(server, "/api/v1/cluster")["cores"]

    def pct(v: int, q: dict) -> float:
        scale = q["max_cores"] if q["max_cores"] is not None else cores
        return min(100.0, 100.0 * v / scale) if scale > 0 else 0.0

    return {q["name"]: (pct(q["executor_cores"], q), pct(q["demand_cores"], q))
            for q in api(server, "/api/v1/queues")}


def test_queue_bars_are_as_wide_as_the_apis_figures(busy_server, app_dir, tab):
    submit(busy_server, app_dir, "etl-long", 5000, conf=LONG)
    submit(busy_server, app_dir, "adhoc-long", 5000, queue="root.adhoc", conf=LONG)
    deadline = time.monotonic() + 60
    while api(busy_server, "/api/v1/queues")[1]["executor_cores"] == 0:
        assert time.monotonic() < deadline, "root.etl's app never held an executor"
        time.sleep(0.2)
    page = tab.open(f"{busy_server.url}/")
    expect(page.locator("#queues td:first-child")).to_have_text(
        ["root", "root.etl", "root.adhoc"], timeout=WAIT_MS)

    # The figures move while executors start: the page must match the API once both settle.
    deadline, shown, wanted = time.monotonic() + WAIT_MS / 1000, None, None
    while time.monotonic() < deadline:
        wanted = expected_widths(busy_server)
        time.sleep(2.5)  # a poll later
        shown = bar_widths(page)
        if shown.keys() == wanted.keys() and all(
                abs(shown[q][i] - wanted[q][i]) < 0.01 for q in wanted for i in (0, 1)):
            break
    else:
        pytest.fail(f"bars {shown} against the API's {wanted}")
    assert wanted["root.etl"][0] > 0 and wanted["root.adhoc"][0] > 0
    # root.etl's guarantee, 2 of its cap of 6 cores, as a tick a third of the way along.
    left = page.locator("#queues tbody tr").nth(1).locator(".bar .guarantee")
    assert abs(float(left.evaluate("e => parseFloat(e.style.left)")) - 100 * 2 / 6) < 0.01

    # The memory bars: the executors' memory held and wanted, of the cluster's memory.
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline:
        cluster_mib = api(busy_server, "/api/v1/cluster")["memory_mib"]
        wanted = {q["name"]: (100 * q["executor_memory_mib"] / cluster_mib,
                              100 * q["demand_memory_mib"] / cluster_mib)
                  for q in api(busy_server, "/api/v1/queues")}
        time.sleep(2.5)  # a poll later
        shown = memory_widths(page)
        if shown.keys() == wanted.keys() and all(
                abs(shown[q][i] - min(100.0, wanted[q][i])) < 0.01 for q in wanted
                for i in (0, 1)):
            break
    else:
        pytest.fail(f"memory bars {shown} against the API's {wanted}")
    assert wanted["root.etl"][0] > 0

    # The cluster view: both workers, the cores they offer, and those the apps' drivers and
    # executors use on them now (the backend's last report, not its first).
    expect(page.locator("#workers td:first-child")).to_have_text(["worker-1", "worker-2"])
    expect(page.locator("#cluster-line")).to_contain_text("8 cores")
    workers = api(busy_server, "/api/v1/cluster")["workers"]
    assert sum(w["cores"] - w["free_cores"] for w in workers) > 0, workers
    expect(page.locator("#workers")).to_contain_text(re.compile(r"[1-4] of 4 cores used"))
    assert tab.errors == [] and tab.dialogs == []


def test_filters_and_search_narrow_the_apps_table(offline_server, app_dir, tab):
    etl = [submit(offline_server, app_dir, f"nightly-{i}", 5000 + i) for i in range(3)]
    adhoc = submit(offline_server, app_dir, "report-adhoc", 5000, queue="root.adhoc")
    page = tab.open(f"{offline_server.url}/")
    ids = page.locator("#apps td:first-child")
    expect(ids).to_have_count(4, timeout=WAIT_MS)

    page.select_option("#f-queue", "root.adhoc")
    expect(ids).to_have_text([adhoc])
    expect(page.locator("#apps-count")).to_have_text("1 of 4 apps match")
    page.select_option("#f-queue", "")
    expect(ids).to_have_count(4)

    page.fill("#f-search", "NIGHTLY-1")  # by name, whatever the case
    expect(ids).to_have_text([etl[1]])
    page.fill("#f-search", etl[2])  # by id
    expect(ids).to_have_text([etl[2]])
    page.fill("#f-search", "")
    page.select_option("#f-state", "RUNNING")
    expect(ids).to_have_count(0)
    page.select_option("#f-state", "ACCEPTED")
    expect(ids).to_have_count(4)

    # The choice holds across the page's polls; the reason is a badge with its sentence.
    page.select_option("#f-queue", "root.etl")
    time.sleep(2.5)
    expect(ids).to_have_count(3)
    reason = cell(page, "apps", etl[0], "Reason").locator(".badge")
    app = api(offline_server, f"/api/v1/apps/{etl[0]}")
    expect(reason).to_have_text(app["reason_code"])
    expect(reason).to_have_attribute("title", app["reason"])
    assert tab.errors == [] and tab.dialogs == []


def test_the_apps_table_shows_its_first_rows_and_more_on_demand(offline_server, app_dir, tab):
    ids = [submit(offline_server, app_dir, f"batch-{i}", 5000) for i in range(103)]
    page = tab.open(f"{offline_server.url}/")
    rows = page.locator("#apps td:first-child")
    expect(rows).to_have_count(100, timeout=WAIT_MS)  # the first page only: the server cuts it
    expect(page.locator("#apps-count")).to_have_text("103 apps; the first 100 shown")
    expect(rows.first).to_have_text(ids[0])  # queue order, as the API lists them
    more = page.locator("#apps-more")
    expect(more).to_have_text("Show 3 more")
    more.click()
    expect(rows).to_have_count(103, timeout=WAIT_MS)
    expect(page.locator("#apps-count")).to_have_text("103 apps")
    expect(more).to_be_hidden()
    page.fill("#f-search", "batch-10")  # searched on the server: batch-10 and batch-100..102
    expect(rows).to_have_text([ids[10], ids[100], ids[101], ids[102]], timeout=WAIT_MS)
    expect(page.locator("#apps-count")).to_have_text("4 of 103 apps match")
    assert tab.errors == [] and tab.dialogs == []


def test_an_apps_page_tells_its_events_in_order(offline_server, app_dir, tab):
    app_id = submit(offline_server, app_dir, HOSTILE, 5000)
    r = HTTP.post(f"{offline_server.url}/api/v1/apps/{app_id}/priority",
                   json={"priority": 9000}, timeout=30)
    assert r.status_code == 200, r.text
    r = HTTP.post(f"{offline_server.url}/api/v1/apps/{app_id}/kill", timeout=30)
    assert r.status_code == 200, r.text
    kinds = [e["kind"] for e in api(offline_server, f"/api/v1/apps/{app_id}/events")]
    assert kinds[0] == "submitted" and {"priority", "kill", "state"} <= set(kinds), kinds

    page = tab.open(f"{offline_server.url}/")
    page.locator(f"#apps a[href='/app/{app_id}']").click()  # each app opens its own page
    page.wait_for_url(f"{offline_server.url}/app/{app_id}")
    steps = page.locator("#timeline li")
    expect(steps).to_have_count(len(kinds), timeout=WAIT_MS)
    assert [s.get_attribute("data-kind") for s in steps.all()] == kinds
    expect(steps.first.locator(".what")).to_have_text("Submitted")
    expect(steps.last.locator(".what")).to_have_text("Ended KILLED")
    # The name is text, in the title and the facts; nothing of it ran.
    expect(page.locator("#title")).to_have_text(f"{HOSTILE} ({app_id})")
    assert page.locator("img").count() == 0 and tab.dialogs == []
    # Its audit rows (auth off: everyone is the admin) and why it does not wait.
    expect(page.locator("#audit td:nth-child(2)")).to_have_text(
        ["submitted", "priority", "kill"], timeout=WAIT_MS)
    expect(page.locator("#why")).to_contain_text("Not waiting")
    assert tab.errors == []


def test_no_request_leaves_the_schedulers_origin(offline_server, app_dir, tab):
    app_id = submit(offline_server, app_dir, "local-only", 5000)
    page = tab.open(f"{offline_server.url}/")
    expect(row(page, "apps", app_id)).to_have_count(1, timeout=WAIT_MS)
    time.sleep(2.5)  # a poll more
    page = tab.open(f"{offline_server.url}/app/{app_id}")
    expect(page.locator("#timeline li")).to_have_count(1, timeout=WAIT_MS)
    assert tab.requests, "no request seen"
    away = [u for u in tab.requests if not u.startswith(offline_server.url + "/")]
    assert away == [], f"requests beyond {offline_server.url}: {away}"
    # The pages say so themselves: a policy that lets them reach their origin only.
    policy = HTTP.get(f"{offline_server.url}/", timeout=30).headers["content-security-policy"]
    assert "default-src 'self'" in policy and "connect-src 'self'" in policy
    assert tab.errors == [] and tab.dialogs == []


def test_an_apps_page_says_who_is_ahead_of_it(offline_server, app_dir, tab):
    first = submit(offline_server, app_dir, "first", 9000)
    second = submit(offline_server, app_dir, "second", 8000)
    last = submit(offline_server, app_dir, "last", 1000)
    page = tab.open(f"{offline_server.url}/app/{last}")
    why = page.locator("#why")
    expect(why).to_contain_text("Waiting, position 3 in root.etl", timeout=WAIT_MS)
    expect(why).to_contain_text("Ahead of it in root.etl: 2")
    expect(why.locator("a")).to_have_text([first, second])  # each a link to its own page
    app = api(offline_server, f"/api/v1/apps/{last}")
    expect(why.locator(".badge")).to_have_text(app["reason_code"])
    expect(page.locator("#facts")).to_contain_text("Priority1000")
    assert tab.errors == [] and tab.dialogs == []


def test_an_apps_page_says_what_its_executors_wait_for(tmp_path, app_dir, tab):
    """Two GPU apps in a fairshare queue on one worker of 2 GPUs; the first holds both and
    gives one back only once idle (``reclaim_timeout: -1``): the second's page says its
    executors, granted below its target, wait for a GPU, and that its queue divides."""
    config = gpu_memory_config(tmp_path / "state", 1, 8, "16g", 2, [
        {"name": "ml", "policy": "fairshare", "reclaim_timeout": -1}])
    conf = TWO_GPU_EXECUTORS
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        first = submit(server, app_dir, "first", 5000, "root.ml", conf)
        wait_until(lambda: api(server, f"/api/v1/apps/{first}").get("resources", {})
                   .get("held") == {"gpu": 2}, 60, "the first app to hold both GPUs")
        second = submit(server, app_dir, "second", 5000, "root.ml", conf)
        wait_until(lambda: [n["code"] for n in api(server, f"/api/v1/apps/{second}")
                            .get("executor_notes", [])] == ["resource_short",
                                                            "target_below_demand"],
                   60, "the second app's notes: a GPU short, its queue dividing")
        page = tab.open(f"{server.url}/app/{second}")
        why = page.locator("#why")
        expect(why).to_contain_text("Executors: 0 held, 0 granted, target 1, demand 2",
                                    timeout=WAIT_MS)
        for note in api(server, f"/api/v1/apps/{second}")["executor_notes"]:
            expect(why.locator(f'p.note[data-code="{note["code"]}"]')).to_have_text(
                note["text"])
        expect(page.locator("#facts")).to_contain_text("0 held, 0 granted, 1 target, 2 wanted")
        # The apps table gives every running app short of executors its one code.
        page = tab.open(f"{server.url}/")
        badge = cell(page, "apps", second, "Reason").locator(".badge")
        expect(badge).to_have_text("resource_short(gpu)", timeout=WAIT_MS)
        expect(badge).to_have_attribute(
            "title", "its executors wait for gpu: no worker has it free for one")
        expect(cell(page, "apps", first, "Reason")).to_have_text("")
    finally:
        server.stop()
    assert tab.errors == [] and tab.dialogs == []
