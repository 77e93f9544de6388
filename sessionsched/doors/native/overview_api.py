"""``GET /api/v1/overview``: what the dashboard's overview page reads every two seconds, in one
answer (``{"health", "queues", "apps", "cluster"}``, each as its own read answers it).

One answer shared by every reader, built at most once a second (``FRESH_S``; ``Age`` says how
old it is): with fifty pages open the server builds it once a second, not fifty times every two
seconds (benchmarks/dashboard_load.py, docs/benchmarks.md). Its ETag is a hash of its bytes: a
page that sends ``If-None-Match`` gets a 304 while nothing changed. The build reads the store
(the health's round trip), so it runs in the thread pool; a reader that finds it fresh is
answered on the event loop at once.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from sessionsched.doors.native import api
from sessionsched.doors.native.apps_page import LIMIT_MAX, AppsQuery, page_json
from sessionsched.doors.native.deps import CallerDep, OpsDep
from sessionsched.doors.native.schemas import (
    AppOut,
    ClusterOut,
    HealthOut,
    QueueOut,
    error_responses,
)
from sessionsched.doors.native.shared_answers import respond, shared
from sessionsched.doors.native.spark_ui import with_spark_ui
from sessionsched.operations.port import Operations

FRESH_S = 1.0  # the oldest answer given: half the page's poll interval

router = APIRouter()


class OverviewOut(BaseModel):
    health: HealthOut
    queues: list[QueueOut]
    apps: list[AppOut]
    cluster: ClusterOut
    # With any of the apps' parameters (the dashboard's table: ``apps_page``): how many apps
    # match, how many there are, and their users; ``apps`` is then the matching ones only.
    apps_matched: int | None = None
    apps_total: int | None = None
    apps_users: list[str] | None = None


@router.get("/api/v1/overview", response_model=OverviewOut, responses=error_responses(400, 422))
async def overview(request: Request, ops: OpsDep, _caller: CallerDep,
                   queue: str | None = None, user: str | None = None,
                   state: str | None = None, search: str | None = None,
                   limit: Annotated[int | None, Query(ge=0, le=LIMIT_MAX)] = None):
    query = AppsQuery.of(queue, user, state, search, limit)

    def build() -> bytes:
        return overview_json(request, ops, query)
    key = ("overview",) if query is None else ("overview", query)
    return respond(request, await shared(request).within_off_loop(key, FRESH_S, build))


def overview_json(request: Request, ops: Operations, query: AppsQuery | None = None) -> bytes:
    """The four reads, the lists as kept per read view (``api.queues_json``, ``apps_json``;
    with a ``query``, its page of the apps: ``apps_page``)."""
    health = api.health(ops).model_dump_json().encode()
    cluster = ClusterOut(**with_spark_ui(ops, ops.cluster_row())).model_dump_json().encode()
    queues = api.queues_json(request, ops).body
    apps = (b'"apps":' + api.apps_json(request, ops).body if query is None
            else page_json(request, ops, query))
    return (b'{"health":' + health + b',"queues":' + queues + b',' + apps +
            b',"cluster":' + cluster + b"}")
