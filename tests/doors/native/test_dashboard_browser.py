"""The overview page at ``/`` in a real headless Chromium (Debian's ``chromium``, driven by
Playwright: tests/support/browser.py) against a real ``sessionsched serve`` process whose Spark
cluster cannot be reached: submissions queue, nothing launches, so queue positions hold still
while the page shows them."""

from __future__ import annotations

import os
import signal
from datetime import datetime, timedelta, timezone

import pytest
from playwright.sync_api import expect

from tests.support.browser import (
    HOSTILE,
    WAIT_MS,
    cell,
    exactly,
    row,
    submit,
)
from tests.support.cli_helpers import offline_scheduler
from tests.support.http_client import HTTP

pytestmark = pytest.mark.browser  # chromium: left out of make test-fast


def test_the_health_line_names_the_plan_in_force_and_the_next(tmp_path, tab):
    now = datetime.now(timezone.utc).replace(microsecond=0)
    plans = [{"at": (now + timedelta(hours=h)).isoformat(), "queues": {"etl": {"weight": w}}}
             for h, w in ((-1, 3), (1, 4))]
    with offline_scheduler(tmp_path, plans=plans) as server:
        page = tab.open(f"{server.url}/")
        expect(page.locator("#health")).to_contain_text(
            f" | plan 'at {plans[0]['at']}': etl weight=3.0 | next: plan 'at {plans[1]['at']}': "
            f"etl weight=4.0 at {plans[1]['at']}", timeout=WAIT_MS)


def test_health_queues_and_apps_in_priority_order_follow_a_priority_change(
        offline_server, app_dir, tab):
    low = submit(offline_server, app_dir, "nightly-low", 5000)
    high = submit(offline_server, app_dir, "urgent-high", 9000)
    page = tab.open(f"{offline_server.url}/")

    # The health line is the scheduler's own one-line view of the (unreachable) cluster.
    expect(page.locator("#health")).to_contain_text("cannot reach the Spark master",
                                                    timeout=WAIT_MS)
    # The queue table: every configured queue, with its policy and what waits in it.
    expect(page.locator("#queues td:first-child")).to_have_text(
        ["root", "root.etl", "root.adhoc"], timeout=WAIT_MS)
    expect(cell(page, "queues", "root.etl", "Policy")).to_have_text("priority")
    expect(cell(page, "queues", "root.etl", "Pending")).to_have_text("2", timeout=WAIT_MS)
    expect(cell(page, "queues", "root.adhoc", "Pending")).to_have_text("0")
    # Usage by queue (docs/operator/usage.md): two apps queued in root.etl, nothing held yet.
    expect(cell(page, "usage", "root.etl", "Apps")).to_have_text("2", timeout=WAIT_MS)
    expect(cell(page, "usage", "root.etl", "Core-s held")).to_have_text("0")
    expect(page.locator("#usage td:first-child")).to_have_text(["root.etl"])

    # Apps in queue order: the 9000 one first although it came second.
    expect(cell(page, "apps", high, "Position")).to_have_text("1", timeout=WAIT_MS)
    expect(cell(page, "apps", low, "Position")).to_have_text("2", timeout=WAIT_MS)
    expect(page.locator("#apps td:first-child")).to_have_text([high, low])
    expect(cell(page, "apps", high, "Name")).to_have_text("urgent-high")
    expect(cell(page, "apps", low, "State")).to_have_text("ACCEPTED")
    expect(row(page, "apps", low)).to_have_class("ACCEPTED")

    # Raise the low one above the other through the API; the page follows by itself.
    r = HTTP.post(f"{offline_server.url}/api/v1/apps/{low}/priority", json={"priority": 10000},
                   timeout=30)
    assert r.status_code == 200, r.text
    expect(cell(page, "apps", low, "Priority")).to_have_text("10000", timeout=WAIT_MS)
    expect(cell(page, "apps", low, "Position")).to_have_text("1", timeout=WAIT_MS)
    expect(cell(page, "apps", high, "Position")).to_have_text("2", timeout=WAIT_MS)
    expect(page.locator("#apps td:first-child")).to_have_text([low, high])
    assert tab.same_document(), "the page was reloaded; it should update in place"
    assert tab.errors == [] and tab.dialogs == []


def test_app_names_are_shown_as_text_never_as_markup(offline_server, app_dir, tab):
    hostile = submit(offline_server, app_dir, HOSTILE, 9000)
    entity = submit(offline_server, app_dir, "a&amp;b \"q\" 'q'", 5000, queue="root.adhoc")
    page = tab.open(f"{offline_server.url}/")

    expect(cell(page, "apps", hostile, "Name")).to_have_text(exactly(HOSTILE), timeout=WAIT_MS)
    expect(cell(page, "apps", entity, "Name")).to_have_text(exactly("a&amp;b \"q\" 'q'"))
    assert page.locator("img").count() == 0
    # One more poll renders the tables again (the priority shows it): still nothing runs.
    r = HTTP.post(f"{offline_server.url}/api/v1/apps/{hostile}/priority", json={"priority": 9500},
                   timeout=30)
    assert r.status_code == 200, r.text
    expect(cell(page, "apps", hostile, "Priority")).to_have_text("9500", timeout=WAIT_MS)
    assert page.locator("img").count() == 0
    assert tab.dialogs == [], f"the app name ran as script: {tab.dialogs}"
    assert tab.errors == []


def test_page_says_scheduler_unreachable_when_it_hangs_or_stops(offline_server, tab):
    page = tab.open(f"{offline_server.url}/")
    health = page.locator("#health")
    expect(health).to_contain_text("cannot reach the Spark master", timeout=WAIT_MS)

    # A scheduler that accepts connections but never answers (stopped, not gone).
    os.kill(offline_server.proc.pid, signal.SIGSTOP)
    try:
        expect(health).to_have_text("scheduler unreachable", timeout=WAIT_MS)
        expect(page.locator("body")).to_have_class("stale")  # the tables shown are old
    finally:
        os.kill(offline_server.proc.pid, signal.SIGCONT)
    # Back again: the page recovers on its own.
    expect(health).to_contain_text("cannot reach the Spark master", timeout=WAIT_MS)
    expect(page.locator("body")).not_to_have_class("stale")

    # Gone: nothing listens on the port any more.
    offline_server.stop()
    expect(health).to_have_text("scheduler unreachable", timeout=WAIT_MS)
    assert tab.same_document()
    assert tab.errors == [] and tab.dialogs == []
