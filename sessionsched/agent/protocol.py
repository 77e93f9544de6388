"""The agent's side of the wire protocol (``docs/design/agent-protocol.md``): bodies it sends and
the answer it reads. Plain data, standard library only.

Reading an answer is lenient: a field the server leaves out takes its default, so a newer
server can add fields and an older one can omit them without breaking a running app. An answer
without ``keepalive_s`` is an older server's: the agent then heartbeats every ``heartbeat_s``
and never watches (the old protocol).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .profiles import profile_body
from .spark_control import SparkFacts

REGISTER_PATH = "/api/v1/agent/register"
HEARTBEAT_PATH = "/api/v1/agent/heartbeat"
WATCH_PATH = "/api/v1/agent/watch"
TERMINAL_STATES = frozenset({"FINISHED", "FAILED", "KILLED"})
MODES = frozenset({"kill", "decommission", "idle"})


@dataclass(frozen=True)
class ReclaimOrder:
    executor_ids: tuple[str, ...]
    mode: str  # kill | decommission | idle
    deadline: float | None = None  # epoch seconds; decommission: kill any still alive then


@dataclass(frozen=True)
class Answer:
    heartbeat_s: float
    target: int
    grant: int
    state: str
    reclaim: tuple[ReclaimOrder, ...] = ()
    keepalive_s: float | None = None  # None: an older server (heartbeats only, no watch)
    version: int = 0
    # The grant split over the app's resource profiles (id -> executors); empty: the whole
    # ``grant`` is the default profile's (an older server, or an app with no other profile).
    grants: tuple[tuple[int, int], ...] = ()

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    @classmethod
    def from_json(cls, body: dict, default_heartbeat_s: float) -> Answer:
        """A ``ValueError`` naming the field for an answer the agent cannot act on (a proxy's
        JSON, a garbled field): the agent and its watch take it as no answer and ask again."""
        body = _object(body, "answer")
        orders = []
        for o in _list(body.get("reclaim"), "reclaim"):
            o = _object(o, "reclaim order")
            mode = str(o.get("mode", ""))
            if mode not in MODES:
                raise ValueError(f"unknown reclaim mode {mode!r}")
            deadline = o.get("deadline")
            orders.append(
                ReclaimOrder(
                    # a string here is no list: its characters are not executor ids to kill
                    tuple(str(i) for i in _list(o.get("executor_ids"), "executor_ids")),
                    mode,
                    _finite(deadline, "deadline") if deadline is not None else None,
                )
            )
        heartbeat_s = _finite(body.get("heartbeat_s") or default_heartbeat_s, "heartbeat_s")
        keepalive_s = body.get("keepalive_s")
        grants = _object(body.get("grants") or {}, "grants")
        return cls(
            heartbeat_s=min(max(heartbeat_s, 0.1), 60.0),
            target=_whole(body.get("target") or 0, "target"),
            grant=_whole(body.get("grant") or 0, "grant"),
            state=str(body.get("state") or ""),
            reclaim=tuple(orders),
            keepalive_s=(min(max(_finite(keepalive_s, "keepalive_s"), 1.0), 300.0)
                         if keepalive_s else None),
            version=_whole(body.get("version") or 0, "version"),
            grants=tuple(sorted((_whole(k, "grants"), _whole(v, f"grants.{k}"))
                                for k, v in grants.items())),
        )


def _object(value, what: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{what}: not a JSON object ({type(value).__name__})")
    return value


def _list(value, what: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{what}: not a JSON list ({type(value).__name__})")
    return value


def _finite(value, what: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what}: {value!r:.40} is not a number") from None
    if not math.isfinite(number):
        raise ValueError(f"{what}: {value!r} is not a finite number")
    return number


def _whole(value, what: str) -> int:
    if isinstance(value, int):
        return value
    number = _finite(value, what)
    if not number.is_integer():
        raise ValueError(f"{what}: {value!r} is not a whole number")
    return int(number)


def register_body(
    app_id: str, spark_app_id: str | None, spark_version: str, pid: int, control: str,
    reason: str | None,
) -> dict:
    return {
        "app_id": app_id,
        "spark_app_id": spark_app_id,
        "spark_version": spark_version,
        "pid": pid,
        "control": control,
        "reason": reason,
    }


def heartbeat_body(app_id: str, facts: SparkFacts, control: str,
                   observed_at: float | None = None,
                   removed: dict[str, float] | None = None,
                   changed_after: float | None = None) -> dict:
    """``observed_at``: when the agent read these facts; ``removed``: executor id -> when it
    left, for executors gone since the last report; ``changed_after``: the agent's last look
    before, that still found the facts as they were (their changes happened in between). All
    optional: an older server ignores them, and an older agent's report without them is
    counted as it arrives. Each executor of a profile other than the default says its
    ``profile``, and ``profiles`` lists every profile read (an older server ignores both).
    The agent adds ``stages`` (``stages.stages_body``) to a report it sends, not here: they are
    read only for one that goes out."""
    body = {
        "app_id": app_id,
        "demand": facts.demand,
        "pending_tasks": facts.pending_tasks,
        "running_tasks": facts.running_tasks,
        "executors": [
            {"id": e.executor_id, "idle": e.idle, "started_at": e.started_at,
             **({"profile": e.profile} if e.profile else {})}
            for e in facts.executors
        ],
        "control": control,
    }
    if facts.profiles:
        body["profiles"] = [profile_body(p) for p in facts.profiles]
    if observed_at is not None:
        body["observed_at"] = observed_at
        body["removed"] = [{"id": eid, "at": at} for eid, at in (removed or {}).items()]
        if changed_after is not None:
            body["changed_after"] = changed_after
    return body


def watch_body(app_id: str, version: int, wait_s: float) -> dict:
    return {"app_id": app_id, "version": version, "wait_s": wait_s}
