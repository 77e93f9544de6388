"""The native API's objects, typed: the answers (``App``, ``QueueInfo``), which keep the
server's JSON as it was sent (``raw``, so ``--json`` output is exactly the API's object), and
the body of a submission (``Submission``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..model import AppState


def parse_time(value: str | None) -> datetime | None:
    """An API timestamp (ISO 8601, ``Z`` for UTC) as an aware datetime."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@dataclass(frozen=True)
class App:
    """The API's app object (``docs/user/api.md``), typed. ``raw`` is the JSON as received."""

    id: str
    name: str
    user: str
    queue: str
    priority: int
    state: AppState
    position: int | None
    submitted_at: datetime | None
    started_at: datetime | None
    first_executor_at: datetime | None
    finished_at: datetime | None
    exit_code: int | None
    executors: int
    target: int
    demand: int
    spark_app_id: str | None
    kind: str
    reason: str | None
    reason_code: str | None  # while it waits (docs/user/reasons.md)
    warnings: tuple[str, ...]
    raw: dict[str, Any]
    # While queued (docs/design/estimates.md): when it is estimated to start, and the counter-offer
    # (``executors``, ``estimated_start``, ``instead_of``, ``text``) if it has one.
    estimated_start: datetime | None = None
    # Its target placed on the workers as they free (docs/user/api.md; an older server sends
    # none: taken as its target).
    grant: int = 0
    counter_offer: dict[str, Any] | None = None
    # A gang's ``executors``, ``timeout_s``, ``style`` and, while it reserves, ``reservation``
    # (docs/user/api.md); None: not a gang.
    gang: dict[str, Any] | None = None

    @property
    def offer_text(self) -> str | None:
        return (self.counter_offer or {}).get("text")

    @property
    def executor_wait(self) -> str | None:
        """While it runs short of executors, what it waits for (docs/user/api.md):
        ``resource_short(gpu)`` naming the resource, else the code; None otherwise (and from
        a server older than it)."""
        code = self.raw.get("executor_wait_code")
        resource = self.raw.get("executor_wait_resource")
        return f"{code}({resource})" if code and resource else code

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> App:
        return cls(
            id=data["id"],
            name=data.get("name") or "",
            user=data.get("user") or "",
            queue=data.get("queue") or "",
            priority=int(data["priority"]),
            state=AppState(data["state"]),
            position=data.get("position"),
            submitted_at=parse_time(data.get("submitted_at")),
            started_at=parse_time(data.get("started_at")),
            first_executor_at=parse_time(data.get("first_executor_at")),
            finished_at=parse_time(data.get("finished_at")),
            exit_code=data.get("exit_code"),
            executors=int(data.get("executors") or 0),
            target=int(data.get("target") or 0),
            demand=int(data.get("demand") or 0),
            grant=int(data.get("grant", data.get("target")) or 0),
            spark_app_id=data.get("spark_app_id"),
            kind=data.get("kind") or "",
            reason=data.get("reason"),
            reason_code=data.get("reason_code"),
            warnings=tuple(data.get("warnings") or ()),
            raw=data,
            estimated_start=parse_time(data.get("estimated_start")),
            counter_offer=data.get("counter_offer"),
            gang=data.get("gang"),
        )


@dataclass(frozen=True)
class QueueInfo:
    """One queue from ``GET /api/v1/queues``; ``raw`` is the JSON as received. A parent's
    leaf-only settings are "" (``admission``, ``policy``) or None."""

    name: str
    admission: str
    policy: str
    weight: float
    pending: int
    starting: int
    running: int
    executor_cores: int
    demand_cores: int
    waiting_reason: str | None
    waiting_reason_code: str | None
    raw: dict[str, Any]
    leaf: bool = True
    max_cores: int | None = None
    max_running_apps: int | None = None
    max_wait: float | None = None
    max_queued_apps: int | None = None
    max_queued_apps_per_user: int | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> QueueInfo:
        return cls(
            leaf=bool(data.get("leaf", True)),
            max_cores=data.get("max_cores"),
            max_running_apps=data.get("max_running_apps"),
            max_wait=data.get("max_wait"),
            max_queued_apps=data.get("max_queued_apps"),
            max_queued_apps_per_user=data.get("max_queued_apps_per_user"),
            name=data["name"],
            admission=data.get("admission") or "",
            policy=data.get("policy") or "",
            weight=float(data.get("weight") or 0),
            pending=int(data.get("pending") or 0),
            starting=int(data.get("starting") or 0),
            running=int(data.get("running") or 0),
            executor_cores=int(data.get("executor_cores") or 0),
            demand_cores=int(data.get("demand_cores") or 0),
            waiting_reason=data.get("waiting_reason"),
            waiting_reason_code=data.get("waiting_reason_code"),
            raw=data,
        )


@dataclass(frozen=True)
class Submission:
    """The body of ``POST /api/v1/apps``. ``argv`` are spark-submit's arguments without
    ``--master``; ``cwd`` is absolute so relative paths in them resolve on the server."""

    argv: tuple[str, ...]
    cwd: str
    queue: str | None = None
    priority: int | None = None
    name: str | None = None
    conf: Mapping[str, str] | None = None
    env: Mapping[str, str] | None = None
    # From another host: reference in argv -> SHA-256 (upload_file); {} when nothing is local.
    uploads: Mapping[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        body = {
            "argv": list(self.argv),
            "cwd": self.cwd,
            "queue": self.queue,
            "priority": self.priority,
            "name": self.name,
            "conf": dict(self.conf or {}),
            "env": dict(self.env or {}),
        }
        if self.uploads is not None:
            body["uploads"] = dict(self.uploads)
        return body
