"""The dashboard at ``/`` in a real headless Chromium (Debian's ``chromium``, driven by
Playwright) against a real ``sessionsched serve`` process whose Spark cluster cannot be reached:
submissions queue, nothing launches, so queue positions hold still while the page shows them.

Chromium is not optional here: without ``/usr/bin/chromium`` these tests fail (they do not skip);
``make test`` installs it (``apt-get install -y chromium``)."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from sessionsched.commands._serverproc import ServerProcess

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-proxy-server",
]
WAIT_MS = 25_000  # bound on every wait for the page; the page polls every 2 s
HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} not found: these tests need Debian's chromium "
                    "(apt-get install -y chromium; make test installs it)", pytrace=False)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
                               timeout=60_000)
        try:
            yield b
        finally:
            b.close()


@dataclass
class Tab:
    """A page with what it did that a user would notice: dialogs opened, uncaught errors."""

    page: Page
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def open(self, url: str) -> Page:
        self.page.goto(url, wait_until="load")
        # Marks this document: still there later means the page updated without a reload.
        self.page.evaluate("window.__sameDocument = true")
        return self.page

    def same_document(self) -> bool:
        return self.page.evaluate("window.__sameDocument === true")


@pytest.fixture
def tab(browser) -> Iterator[Tab]:
    context = browser.new_context()
    context.set_default_timeout(WAIT_MS)
    t = Tab(context.new_page())

    def on_dialog(dialog):
        t.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    t.page.on("dialog", on_dialog)
    t.page.on("pageerror", lambda exc: t.errors.append(str(exc)))
    try:
        yield t
    finally:
        context.close()


def submit(server: ServerProcess, work: Path, name: str, priority: int,
           queue: str = "root.etl") -> str:
    r = httpx.post(f"{server.url}/api/v1/apps", timeout=30, json={
        "argv": ["job.py"], "cwd": str(work), "name": name, "priority": priority,
        "queue": queue})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def exactly(text: str) -> re.Pattern:
    return re.compile(f"^{re.escape(text)}$")


def row(page: Page, table: str, first_cell: str):
    """The row of table ``#table`` whose first cell is exactly ``first_cell``."""
    return page.locator(f"#{table} tr").filter(
        has=page.locator("td:first-child", has_text=exactly(first_cell)))


def cell(page: Page, table: str, first_cell: str, column: str):
    """One cell, found by the table's header (so a reordered column does not break this)."""
    expect(page.locator(f"#{table} th").first).to_be_visible(timeout=WAIT_MS)
    index = page.locator(f"#{table} th").all_text_contents().index(column)
    return row(page, table, first_cell).locator("td").nth(index)


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
    expect(cell(page, "queues", "root.etl", "policy")).to_have_text("priority")
    expect(cell(page, "queues", "root.etl", "pending")).to_have_text("2", timeout=WAIT_MS)
    expect(cell(page, "queues", "root.adhoc", "pending")).to_have_text("0")
    # Usage by queue (docs/operator/usage.md): two apps queued in root.etl, nothing held yet.
    expect(cell(page, "usage", "root.etl", "apps")).to_have_text("2", timeout=WAIT_MS)
    expect(cell(page, "usage", "root.etl", "held_core_s")).to_have_text("0")
    expect(page.locator("#usage td:first-child")).to_have_text(["root.etl"])

    # Apps in queue order: the 9000 one first although it came second.
    expect(cell(page, "apps", high, "position")).to_have_text("1", timeout=WAIT_MS)
    expect(cell(page, "apps", low, "position")).to_have_text("2", timeout=WAIT_MS)
    expect(page.locator("#apps td:first-child")).to_have_text([high, low])
    expect(cell(page, "apps", high, "name")).to_have_text("urgent-high")
    expect(cell(page, "apps", low, "state")).to_have_text("ACCEPTED")
    expect(row(page, "apps", low)).to_have_class("ACCEPTED")

    # Raise the low one above the other through the API; the page follows by itself.
    r = httpx.post(f"{offline_server.url}/api/v1/apps/{low}/priority", json={"priority": 10000},
                   timeout=30)
    assert r.status_code == 200, r.text
    expect(cell(page, "apps", low, "priority")).to_have_text("10000", timeout=WAIT_MS)
    expect(cell(page, "apps", low, "position")).to_have_text("1", timeout=WAIT_MS)
    expect(cell(page, "apps", high, "position")).to_have_text("2", timeout=WAIT_MS)
    expect(page.locator("#apps td:first-child")).to_have_text([low, high])
    assert tab.same_document(), "the page was reloaded; it should update in place"
    assert tab.errors == [] and tab.dialogs == []


def test_app_names_are_shown_as_text_never_as_markup(offline_server, app_dir, tab):
    hostile = submit(offline_server, app_dir, HOSTILE, 9000)
    entity = submit(offline_server, app_dir, "a&amp;b \"q\" 'q'", 5000, queue="root.adhoc")
    page = tab.open(f"{offline_server.url}/")

    expect(cell(page, "apps", hostile, "name")).to_have_text(exactly(HOSTILE), timeout=WAIT_MS)
    expect(cell(page, "apps", entity, "name")).to_have_text(exactly("a&amp;b \"q\" 'q'"))
    assert page.locator("img").count() == 0
    # One more poll renders the tables again (the priority shows it): still nothing runs.
    r = httpx.post(f"{offline_server.url}/api/v1/apps/{hostile}/priority", json={"priority": 9500},
                   timeout=30)
    assert r.status_code == 200, r.text
    expect(cell(page, "apps", hostile, "priority")).to_have_text("9500", timeout=WAIT_MS)
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
