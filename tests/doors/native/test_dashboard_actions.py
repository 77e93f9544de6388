"""An app's page acts through the native API (docs/user/watching.md): a priority change and a
kill from the page reach the engine and the audit trail as the CLI's do; with tokens on, the
page asks for a token (kept in the tab's sessionStorage), a token that may not is refused with
the rule named, and without one the page shows the app but cannot act."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from sessionsched.backends.ports import free_port
from sessionsched.commands._serverproc import ServerProcess
from sessionsched.config import tokens_file as tokens
from tests.support.browser import WAIT_MS, submit
from tests.support.cli_helpers import QUEUES
from tests.support.http_client import HTTP

pytestmark = pytest.mark.browser  # chromium: left out of make test-fast


def get(server: ServerProcess, path: str, token: str | None = None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    r = HTTP.get(f"{server.url}{path}", headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def set_priority(page: Page, value: int) -> None:
    page.fill("#priority-input", str(value))
    page.click("#priority-form button[type=submit]")


def kill(page: Page) -> None:
    page.click("#kill")
    page.click("#kill-confirm")  # two clicks, no dialog


def test_a_priority_change_and_a_kill_from_the_page_reach_the_engine_and_the_audit(
        offline_server, app_dir, tab):
    app_id = submit(offline_server, app_dir, "to-act-on", 5000)
    page = tab.open(f"{offline_server.url}/app/{app_id}")
    result = page.locator("#action-result")
    expect(page.locator("#act")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#token-form")).to_be_hidden()  # auth off: no token asked for

    set_priority(page, 9000)
    expect(result).to_have_text("Priority set to 9000.", timeout=WAIT_MS)
    assert get(offline_server, f"/api/v1/apps/{app_id}")["priority"] == 9000
    expect(page.locator("#facts")).to_contain_text("Priority9000", timeout=WAIT_MS)
    set_priority(page, 0)
    expect(result).to_have_text("Refused: priority 0 is outside 1..10000")
    kill(page)
    expect(result).to_have_text("Killed: now KILLED.", timeout=WAIT_MS)
    assert get(offline_server, f"/api/v1/apps/{app_id}")["state"] == "KILLED"
    expect(page.locator("#act")).to_be_hidden(timeout=WAIT_MS)  # nothing left to do

    # Audited as the CLI's: who, from where; the page's audit table shows the rows.
    rows = get(offline_server, f"/api/v1/audit?app={app_id}")
    assert [r["kind"] for r in rows] == ["submitted", "priority", "kill"]
    assert rows[1]["old"] == "5000" and rows[1]["new"] == "9000", rows[1]
    assert rows[2]["actor"].startswith("Admin ") and "from 127.0.0.1" in rows[2]["actor"]
    expect(page.locator("#audit td:nth-child(2)")).to_have_text(
        ["submitted", "priority", "kill"], timeout=WAIT_MS)
    assert tab.errors == [] and tab.dialogs == []


@pytest.fixture
def team_server(tmp_path):
    """A scheduler with tokens on (alice and bob users, root admin) whose anonymous callers are
    the user ``guest``; its cluster cannot be reached, so apps stay queued."""
    path = tmp_path / "tokens.json"
    made = {name: tokens.create(path, name, role)
            for name, role in (("alice", "user"), ("bob", "user"), ("root", "admin"))}
    closed = free_port()
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 50},
        "cluster": {"backend": "standalone", "master": f"spark://127.0.0.1:{closed}",
                    "master_ui": f"http://127.0.0.1:{closed}", "driver_slots": 1},
        "auth": {"mode": "tokens", "tokens_file": str(path), "anonymous": "guest",
                 "run_as_root": True},
        "defaults": {"queue": "root.etl"}, "queues": QUEUES,
    }
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        yield server, made
    finally:
        server.stop()


def give_token(page: Page, token: str) -> None:
    page.fill("#token", token)
    page.click("#token-form button[type=submit]")  # kept in the tab; the page reads again


def test_with_tokens_on_the_page_acts_only_as_its_token_may(team_server, app_dir, tab):
    server, made = team_server
    r = HTTP.post(f"{server.url}/api/v1/apps", timeout=30,
                   headers={"Authorization": f"Bearer {made['alice']}"},
                   json={"argv": ["job.py"], "cwd": str(app_dir), "name": "alices"})
    assert r.status_code == 201, r.text
    app_id = r.json()["id"]
    page = tab.open(f"{server.url}/app/{app_id}")
    result = page.locator("#action-result")

    # No token: the page shows the app (read as the anonymous user) but may not act on it.
    expect(page.locator("#facts")).to_contain_text("Useralice", timeout=WAIT_MS)
    kill(page)
    expect(result).to_have_text(
        f"Refused: user guest may kill only their own apps; {app_id} is alice's",
        timeout=WAIT_MS)
    expect(page.locator("#token-form")).to_be_visible()  # another token may

    # Bob's token: kept in the tab's sessionStorage only, sent as a bearer token.
    give_token(page, made["bob"])
    expect(page.locator("#token-forget")).to_be_visible(timeout=WAIT_MS)
    assert page.evaluate("sessionStorage.getItem('token')") == made["bob"]
    kill(page)
    expect(result).to_have_text(
        f"Refused: user bob may kill only their own apps; {app_id} is alice's",
        timeout=WAIT_MS)

    # Alice's own: above her ceiling refused with the rule; within it done.
    page.click("#token-forget")
    expect(page.locator("#token-forget")).to_be_hidden(timeout=WAIT_MS)
    give_token(page, made["alice"])
    expect(page.locator("#token-forget")).to_be_visible(timeout=WAIT_MS)
    set_priority(page, 9000)
    expect(result).to_have_text("Refused: user alice may set priority 1-5000, not 9000",
                                timeout=WAIT_MS)
    set_priority(page, 4000)
    expect(result).to_have_text("Priority set to 4000.", timeout=WAIT_MS)

    app = get(server, f"/api/v1/apps/{app_id}", made["root"])
    assert (app["priority"], app["state"]) == (4000, "ACCEPTED")  # nothing refused happened
    rows = get(server, f"/api/v1/audit?app={app_id}", made["root"])
    assert [(r["kind"], r["who"]) for r in rows] == [("submitted", "alice"),
                                                    ("priority", "alice")]
    # Not an admin: the audit trail is not hers to read, and the page says so.
    expect(page.locator("#audit")).to_contain_text("admins' to read", timeout=WAIT_MS)
    assert [u for u in tab.requests if not u.startswith(server.url + "/")] == []
    assert tab.errors == [] and tab.dialogs == []


@pytest.fixture
def closed_server(tmp_path):
    """Tokens on and no anonymous user: every read but health needs a token."""
    path = tmp_path / "tokens.json"
    made = {name: tokens.create(path, name, role)
            for name, role in (("alice", "user"), ("root", "admin"))}
    closed = free_port()
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 50},
        "cluster": {"backend": "standalone", "master": f"spark://127.0.0.1:{closed}",
                    "master_ui": f"http://127.0.0.1:{closed}", "driver_slots": 1},
        "auth": {"mode": "tokens", "tokens_file": str(path), "run_as_root": True},
        "defaults": {"queue": "root.etl"}, "queues": QUEUES,
    }
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        yield server, made
    finally:
        server.stop()


def test_without_an_anonymous_user_the_page_asks_for_a_token_before_it_shows_anything(
        closed_server, app_dir, tab):
    server, made = closed_server
    r = HTTP.post(f"{server.url}/api/v1/apps", timeout=30,
                   headers={"Authorization": f"Bearer {made['alice']}"},
                   json={"argv": ["job.py"], "cwd": str(app_dir), "name": "alices"})
    assert r.status_code == 201, r.text
    app_id = r.json()["id"]
    page = tab.open(f"{server.url}/")

    # No token: the box asks for one, and nothing of the scheduler's books is shown.
    form = page.locator("#token-form")
    expect(form).to_be_visible(timeout=WAIT_MS)
    expect(form.locator(".why")).to_have_text("The scheduler asks for a token.")
    expect(page.locator("#health")).to_have_text(
        "a token is needed: give yours in the token box", timeout=WAIT_MS)
    assert page.locator("#apps td").count() == 0 and page.locator("#queues td").count() == 0
    expect(page.locator("body")).to_have_class("stale")

    # A wrong token is asked again for; alice's shows everything, and is kept in the tab.
    give_token(page, "not-a-token")
    expect(page.locator("#health")).to_have_text(
        "a token is needed: give yours in the token box", timeout=WAIT_MS)
    give_token(page, made["alice"])
    expect(form.locator(".why")).to_have_text("Acting with the token given in this tab.",
                                              timeout=WAIT_MS)
    expect(page.locator("#apps td:first-child")).to_have_text([app_id], timeout=WAIT_MS)
    expect(page.locator("#queues td:first-child")).to_have_text(
        ["root", "root.etl", "root.adhoc"])
    assert page.evaluate("sessionStorage.getItem('token')") == made["alice"]
    page.goto(f"{server.url}/app/{app_id}")  # the same tab: the token goes along
    expect(page.locator("#facts")).to_contain_text("Useralice", timeout=WAIT_MS)

    # Forgotten: asked for again. Given in the address's fragment (never sent to the server):
    # kept, and the fragment taken out of the address.
    page.click("#token-forget")
    expect(form.locator(".why")).to_have_text("The scheduler asks for a token.",
                                              timeout=WAIT_MS)
    expect(page.locator("#facts")).to_be_empty()
    page.goto(f"{server.url}/#token={made['root']}")
    expect(page.locator("#apps td:first-child")).to_have_text([app_id], timeout=WAIT_MS)
    assert page.url == f"{server.url}/"
    assert page.evaluate("sessionStorage.getItem('token')") == made["root"]
    assert [u for u in tab.requests if not u.startswith(server.url + "/")] == []
    assert tab.errors == [] and tab.dialogs == []
