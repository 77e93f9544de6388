"""The dashboard's browser rig (tests/support/browser.py) for its test modules here."""

from __future__ import annotations

from tests.support.browser import browser, busy_server, tab  # noqa: F401 - fixtures
