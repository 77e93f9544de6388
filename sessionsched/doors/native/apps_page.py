"""The dashboard's apps table cut on the server: the apps one filter and search match (queue,
user, state; id or name, any case), in the list's order, the first ``limit`` of them, with how
many match, how many there are and who submitted them (the user filter's choices).

Why: with the whole list in every overview, fifty open pages were sent 600 KB each poll at
1,000 apps (every cycle changes a busy cluster's list, so the 304 rarely applies), and that
sending was what an open page still cost the status reads (benchmarks/dashboard_load.py,
docs/benchmarks.md). A page asks for the rows its table shows; the cut is built once per
published view and query (``shared_answers``): pages with the same choices share it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from fastapi import Request

from sessionsched.doors.native.api import _row_json, state_param
from sessionsched.doors.native.shared_answers import shared
from sessionsched.model import AppState
from sessionsched.operations.port import Operations

LIMIT_MAX = 10_000  # rows one answer carries at most


@dataclass(frozen=True)
class AppsQuery:
    queue: str | None = None  # a leaf's full name, as the app's ``queue`` says it
    user: str | None = None
    state: AppState | None = None
    search: str | None = None  # in the id or the name, any case
    limit: int | None = None  # None: every app that matches

    @staticmethod
    def of(queue: str | None, user: str | None, state: str | None, search: str | None,
           limit: int | None) -> AppsQuery | None:
        """The query the parameters ask for; None when they ask for none (the whole list)."""
        if not (queue or user or state or search) and limit is None:
            return None
        text = (search or "").strip().lower()
        return AppsQuery(queue or None, user or None, state_param(state), text or None, limit)


def page_json(request: Request, ops: Operations, query: AppsQuery) -> bytes:
    """``"apps":[...],"apps_matched":M,"apps_total":T,"apps_users":[...]`` (a JSON object's
    members), built once per published view and query."""
    def build() -> bytes:
        apps = ops.apps()
        found = [a for a in apps if _matches(a, query)]
        shown = found if query.limit is None else found[:query.limit]
        users = sorted({a.user for a in apps if a.user})
        waits = ops.executor_waits()
        return (b'"apps":[' + b",".join([_row_json(a, waits.get(a.id)) for a in shown]) +
                b'],"apps_matched":' + str(len(found)).encode() +
                b',"apps_total":' + str(len(apps)).encode() +
                b',"apps_users":' + json.dumps(users).encode())
    return shared(request).of_version(("apps-page", query), ops.version, build).body


def _matches(app, q: AppsQuery) -> bool:
    if q.queue and app.queue != q.queue:
        return False
    if q.user and app.user != q.user:
        return False
    if q.state and app.state != q.state:
        return False
    return not q.search or q.search in app.id.lower() or q.search in app.name.lower()
