"""The native API's shape for one of several clusters behind one server
(docs/operator/clusters.md): ``GET /api/v1/cluster``'s ``clusters``."""

from __future__ import annotations

from pydantic import BaseModel


class ClusterPartOut(BaseModel):
    """One of several clusters, as its engine has it."""

    name: str
    reachable: bool  # its backend answered at the last poll
    cores: int  # what it offers the scheduler's apps
    memory_mib: int
    driver_slots: int | None
    running: int  # apps placed there, not ended
    queued: int  # queued apps with a copy in its queue
    master: str | None = None  # what its apps' drivers connect to (a notebook placed there)


class ClusterHealthOut(BaseModel):
    """One of several clusters in ``GET /api/v1/health``: whether its backend answers."""

    name: str
    reachable: bool  # its backend answered at the last poll
    cores: int  # what it offers the scheduler's apps (0 while out of reach)
    memory_mib: int
