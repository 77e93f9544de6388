"""The dashboard's browser rig: Debian's headless ``chromium`` driven by Playwright, a tab that
records what a user would notice (dialogs, uncaught errors) and every URL it requested, and
helpers that find the pages' cells by their column heads. The dashboard's test modules import
the fixtures.

Chromium is not optional here: without ``/usr/bin/chromium`` these tests fail (they do not skip);
``make test`` installs it (``apt-get install -y chromium``)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from sessionsched.backends.memory import WORK
from sessionsched.commands._serverproc import ServerProcess
from tests.support.http_client import HTTP

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
    """A page with what it did that a user would notice: dialogs opened, uncaught errors; and
    every URL it asked for (documents, scripts, styles, API reads)."""

    page: Page
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

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
    t.page.on("request", lambda request: t.requests.append(request.url))
    try:
        yield t
    finally:
        context.close()


def submit(server: ServerProcess, work: Path, name: str, priority: int,
           queue: str = "root.etl", conf: dict[str, str] | None = None) -> str:
    r = HTTP.post(f"{server.url}/api/v1/apps", timeout=30, json={
        "argv": ["job.py"], "cwd": str(work), "name": name, "priority": priority,
        "queue": queue, "conf": conf or {}})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def exactly(text: str) -> re.Pattern:
    return re.compile(f"^{re.escape(text)}$")


def row(page: Page, table: str, first_cell: str):
    """The row of table ``#table`` whose first cell is exactly ``first_cell``."""
    return page.locator(f"#{table} tr").filter(
        has=page.locator("td:first-child", has_text=exactly(first_cell)))


def cell(page: Page, table: str, first_cell: str, column: str):
    """One cell, found by the table's head (so a reordered column does not break this)."""
    expect(page.locator(f"#{table} th").first).to_be_visible(timeout=WAIT_MS)
    index = page.locator(f"#{table} th").all_text_contents().index(column)
    return row(page, table, first_cell).locator("td").nth(index)


# Two workers of 4 cores: root.etl may hold 6 cores at most and is guaranteed 2; root.adhoc has
# no cap (its bar's scale is the cluster's 8 cores).
QUEUES = [{"name": "root", "queues": [
    {"name": "etl", "policy": "priority", "min_share": 2, "max_cores": 6},
    {"name": "adhoc", "policy": "fifo"},
]}]
# An app that works ten minutes with two executors of one core.
LONG = {WORK: "600", "spark.executor.cores": "1", "spark.executor.memory": "1g",
        "spark.dynamicAllocation.minExecutors": "2", "spark.dynamicAllocation.maxExecutors": "2"}


@pytest.fixture
def busy_server(tmp_path):
    """A scheduler on a memory cluster of two 4-core workers whose apps run and hold executors."""
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 100},
        "cluster": {"backend": "memory", "workers": 2, "cores": 4, "memory": "8g",
                    "driver_start_s": 0.2, "executor_start_s": 0.2},
        "defaults": {"queue": "root.etl"}, "queues": QUEUES,
    }
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        yield server
    finally:
        server.stop()


def api(server: ServerProcess, path: str):
    r = HTTP.get(f"{server.url}{path}", timeout=30)
    assert r.status_code == 200, r.text
    return r.json()
