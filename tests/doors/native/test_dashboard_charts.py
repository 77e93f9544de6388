"""The dashboard's charts (docs/user/watching.md), drawn by the vendored uPlot from the
scheduler's own origin. The overview's usage: per queue and per user, one figure stacked over
the window's hours or days, its sum the window's total the table below shows
(GET /api/v1/usage). An app's executors: held, target and wanted at each of the page's polls."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import LONG, WAIT_MS, api, submit
from tests.support.http_client import HTTP

pytestmark = pytest.mark.browser  # chromium: left out of make test-fast


def plotted(page: Page) -> dict:
    """The chart's series as drawn: labels (topmost first) and the stacked values."""
    return page.evaluate("""() => { const p = document.getElementById("usage-chart").plot;
        return {labels: p.series.slice(1).map(s => s.label), data: p.data.slice(1)}; }""")


def total(page: Page, column: str) -> float:
    heads = page.locator("#usage thead th").all_text_contents()
    return float(page.locator("#usage tfoot th").nth(heads.index(column)).text_content())


def test_usage_is_stacked_per_queue_and_user_and_adds_up_to_the_totals(
        busy_server, app_dir, tab):
    submit(busy_server, app_dir, "etl-long", 5000, conf=LONG)
    submit(busy_server, app_dir, "adhoc-long", 5000, queue="root.adhoc", conf=LONG)
    deadline = time.monotonic() + 60
    while sum(q["executor_cores"] for q in api(busy_server, "/api/v1/queues")) < 4:
        assert time.monotonic() < deadline, "the apps never held their executors"
        time.sleep(0.2)
    time.sleep(2)  # some core-seconds held
    page = tab.open(f"{busy_server.url}/")
    chart = page.locator("#usage-chart canvas")
    expect(chart).to_have_count(1, timeout=WAIT_MS)
    expect(page.locator("#usage-caption")).to_have_text(
        "Core-hours held per queue, last 7 days, by day; stacked (a bar's top is all of them).")
    # The topmost band is drawn first: the last queue's running sum.
    assert plotted(page)["labels"] == ["root.etl", "root.adhoc"]
    expect(page.locator("#usage tbody td:first-child")).to_have_text(["root.adhoc", "root.etl"])
    expect(page.locator("#usage tfoot th").first).to_have_text("Total")

    # The bars' tops over the window add up to the total held, in core-hours (read a moment
    # apart: the apps hold on meanwhile, 4 cores).
    drawn = sum(plotted(page)["data"][0]) * 3600
    assert abs(drawn - total(page, "Core-s held")) <= 4 * 5 + 1, (drawn, total(page,
                                                                             "Core-s held"))
    assert total(page, "Core-s held") > 0

    # Per user, busy, by hour: one user (the server's), the last 24 hours.
    page.select_option("#u-by", "user")
    page.select_option("#u-figure", "busy")
    page.select_option("#u-span", "24h")
    expect(page.locator("#usage-caption")).to_have_text(
        "Core-hours busy per user, last 24 hours, by hour; stacked (a bar's top is all of "
        "them).", timeout=WAIT_MS)
    users = {u["user"] for u in HTTP.get(f"{busy_server.url}/api/v1/usage?by=user",
                                         timeout=30).json()}
    expect(page.locator("#usage tbody td:first-child")).to_have_text(sorted(users),
                                                                   timeout=WAIT_MS)
    assert len(plotted(page)["data"][0]) == 24 and plotted(page)["labels"] == sorted(users)
    away = [u for u in tab.requests if not u.startswith(busy_server.url + "/")]
    assert away == [] and tab.errors == [] and tab.dialogs == []


def test_an_apps_page_charts_its_executors_from_its_own_polls(busy_server, app_dir, tab):
    app_id = submit(busy_server, app_dir, "etl-long", 5000, conf=LONG)
    page = tab.open(f"{busy_server.url}/app/{app_id}")
    expect(page.locator("#executors-chart canvas")).to_have_count(1, timeout=WAIT_MS)

    def drawn() -> dict:
        return page.evaluate("""() => { const p = document.getElementById("executors-chart")
            .plot; return {labels: p.series.slice(1).map(s => s.label), data: p.data}; }""")

    # A point per poll (every two seconds), until it holds the two executors it asked for and
    # a second poll has drawn (on a loaded machine the page may open after they came); the last
    # point is what the API says now.
    deadline, plot, app = time.monotonic() + WAIT_MS / 1000, None, None
    while True:
        app = api(busy_server, f"/api/v1/apps/{app_id}")
        plot = drawn()
        now = (app["executors"], app["target"], app["demand"])
        if (app["executors"] == 2 and len(plot["data"][0]) >= 2
                and tuple(s[-1] for s in plot["data"][1:]) == now):
            break
        assert time.monotonic() < deadline, (plot, app)
        time.sleep(0.5)
    assert plot["labels"] == ["held", "target", "wanted"]
    xs = plot["data"][0]
    assert len(xs) >= 2 and xs == sorted(xs)
    assert tab.errors == [] and tab.dialogs == []
