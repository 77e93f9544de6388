"""The standby's answers: what a scheduler that does not lead answers instead of every door
(``server/leader.ActiveStandby`` decides the role; the server's front, ``server/front.py``,
sends every request here but the health check while it does not serve).

- ``GET /api/v1/health``: itself, 200 with ``status: standby``, ``role`` and ``leader`` (the
  leader's URL once known): it is alive, and a process supervisor must not restart it;
- ``GET /v1/submissions/readyz``: 503, ``success: false`` — what a standby Spark master
  answers, so a load balancer or Kubernetes Service whose readiness check is readyz sends
  traffic to the leader only;
- ``GET /metrics``: ``sessionsched_leader 0`` only (the leader's own has 1 and the books), so a
  scrape of both counts every app once;
- everything else, reads and writes alike, a ``307 Temporary Redirect`` to the same path on the
  leader: a 307 keeps the method and the body, so unmodified ``spark-submit`` (Java's
  ``HttpURLConnection`` re-sends a POST's body on a 307), our CLI, Livy clients (requests)
  and browsers all end at the leader. Reads are redirected rather than served from the store
  because a Spark user expects one answer to ``--status`` whichever address they asked, with
  the queue position and executors only the leader's engine knows (a standby reading the store
  would keep a second, poorer book of the same facts). With no live leader known (it just
  died, nobody has taken over): 503 with ``Retry-After: 1`` and one line saying so;
  ``spark-submit --master spark://a:6066,b:6066`` (Spark's own standalone-HA syntax) then
  tries the other address.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Gauge, generate_latest

from sessionsched.doors.common.asgi import send_answer
from sessionsched.doors.common.spark import SPARK_VERSION

HEALTH_PATH = "/api/v1/health"
READYZ_PATH = "/v1/submissions/readyz"
STANDBY = "standby"

# (the role's name, the leader's URL if known)
Status = Callable[[], tuple[str, str | None]]


class Standby:
    """ASGI: the module docstring's answers, by the role, the leader and the path."""

    def __init__(self, status: Status):
        self.status = status
        self._metrics = CollectorRegistry()
        Gauge("sessionsched_leader", "1 while this scheduler leads (or is the only one)",
              registry=self._metrics).set(0)

    async def __call__(self, scope, receive, send) -> None:
        role, leader = self.status()
        path = scope["path"]
        spark = path.startswith("/v1/submissions")
        if path == "/metrics":
            await send_answer(send, 200, generate_latest(self._metrics), CONTENT_TYPE_LATEST)
        elif path == READYZ_PATH:
            await _json(send, 503, {
                "action": "ReadyzResponse", "success": False, "serverSparkVersion": SPARK_VERSION,
                "message": f"{role}: not the leader"
                           + (f"; the leader is {leader}" if leader else "")})
        elif leader is not None and role == STANDBY:
            query = scope.get("query_string", b"").decode("latin-1")
            location = leader + scope.get("raw_path", path.encode()).decode("latin-1") \
                + (f"?{query}" if query else "")
            message = f"this scheduler is a standby; the leader is {leader}"
            await _json(send, 307, _refusal(spark, message), [(b"location", location.encode())])
        else:
            message = ("this scheduler is a standby and no live leader is known now (one takes "
                       "over within seconds); retry in a moment" if role == STANDBY else
                       "this scheduler is taking over as the leader; retry in a moment")
            await _json(send, 503, _refusal(spark, message), [(b"retry-after", b"1")])


def _refusal(spark: bool, message: str) -> dict:
    if spark:  # Spark's shape, so spark-submit prints the message
        return {"action": "ErrorResponse", "message": message,
                "serverSparkVersion": SPARK_VERSION, "success": False}
    return {"detail": message}


async def _json(send, status: int, body: dict, headers: list | None = None) -> None:
    await send_answer(send, status, json.dumps(body).encode(), headers=headers)
