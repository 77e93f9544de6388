"""The dashboard's screenshots in docs/user/watching.md, taken from a real run so that they
stay true: a scheduler on a memory cluster with two queues and a few apps running and waiting,
each view shot in headless Chromium and checked (a PNG of a sensible size). They are written to
the test's temporary folder; with SESSIONSCHED_SCREENSHOTS=1 to docs/images/ instead, the
copies the docs show (run it so after a change to the pages, and commit them)."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.support.browser import LONG, WAIT_MS, api, submit

pytestmark = pytest.mark.browser  # chromium: left out of make test-fast

DOCS_IMAGES = Path(__file__).resolve().parents[3] / "docs" / "images"
VIEWS = ("queues", "apps", "cluster", "usage")


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def test_screenshots_of_each_view(busy_server, app_dir, tab, tmp_path):
    out = DOCS_IMAGES if os.environ.get("SESSIONSCHED_SCREENSHOTS") == "1" else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    names = ["nightly-etl", "hourly-sales", "feature-build", "backfill-2026"]
    ids = [submit(busy_server, app_dir, n, 4000 + 1000 * i, conf=LONG)
           for i, n in enumerate(names)]
    ids += [submit(busy_server, app_dir, n, 5000, queue="root.adhoc", conf=LONG)
            for n in ("notebook-alice", "report-adhoc")]
    deadline = time.monotonic() + 60
    while sum(q["executor_cores"] for q in api(busy_server, "/api/v1/queues")) < 6:
        assert time.monotonic() < deadline, "the apps never held their executors"
        time.sleep(0.2)

    tab.page.set_viewport_size({"width": 1280, "height": 900})
    time.sleep(3)  # some core-seconds held: the usage chart has something to show
    page = tab.open(f"{busy_server.url}/")
    expect(page.locator("#apps tbody tr")).to_have_count(len(ids), timeout=WAIT_MS)
    expect(page.locator("#usage-chart canvas")).to_have_count(1, timeout=WAIT_MS)
    expect(page.locator("#workers tbody tr")).to_have_count(2, timeout=WAIT_MS)
    shots = {}
    for view in VIEWS:
        shots[view] = out / f"dashboard-{view}.png"
        page.locator(f"#{view}-view").screenshot(path=shots[view])

    # an app of root.etl that runs: which ones do depends on how the submissions fell into
    # cycles (on a loaded machine all four reach one cycle and the first admitted keeps its
    # executors), so the page shown is one the API says is RUNNING
    running = [a["id"] for a in api(busy_server, "/api/v1/apps")
               if a["queue"] == "root.etl" and a["state"] == "RUNNING"]
    assert running, "no app of root.etl runs"
    page = tab.open(f"{busy_server.url}/app/{running[0]}")
    expect(page.locator("#executors-chart canvas")).to_have_count(1, timeout=WAIT_MS)
    expect(page.locator("#facts")).to_contain_text("RUNNING", timeout=WAIT_MS)
    time.sleep(6)  # three polls: a line, not a dot
    shots["app"] = out / "dashboard-app.png"
    page.screenshot(path=shots["app"], full_page=True)

    for view, path in shots.items():
        width, height = png_size(path)
        assert width >= 600 and height >= 100, (view, width, height)
    assert tab.errors == [] and tab.dialogs == []
