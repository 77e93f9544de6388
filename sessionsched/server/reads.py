"""The service's read side: apps, queues, health, the audit trail, driver logs.

Every read takes the service lock once and copies what it shows, so a reader never sees half
a cycle. What it shows of an app comes from the committed books (state, times, priority) and
from the engine (executors, target, demand, queue position). An ended app forgotten beyond
``server.retained_ended_apps`` (``retention``) is read by id from the store: it is no longer
listed, but never lost.
"""

from __future__ import annotations

from ..model import AppState
from ..store import EventRecord, StoredApp
from . import plans


class NotFound(LookupError):
    """No such app. ``str()`` is the message for the caller."""


class ReadsMixin:
    """Mixed into ``Service``; uses its lock, books, engine, health and store."""

    def resolve(self, any_id: str) -> tuple[str, bool] | None:
        """(our app id, given as a Spark application id?) for a driver id or a Spark app id."""
        with self.lock:
            if any_id in self.apps:
                return any_id, False
            app_id = self.by_spark_id.get(any_id)
            if app_id:
                return app_id, True
        if self.stored_app(any_id) is not None:  # forgotten: in the store
            return any_id, False
        app_id = self.store.app_id_of_spark_app(any_id)
        return (app_id, True) if app_id else None

    def snapshot(self, app_id: str) -> dict | None:
        """One app as the views need it (keyword arguments of ``views.app_out``); a forgotten
        (ended) app from the store."""
        app = self.stored_app(app_id)
        if app is None:
            return None
        with self.lock:
            return self._snapshot(app)

    def snapshots(self, queue_name: str | None = None,
                  state: AppState | None = None) -> list[dict]:
        """Queued apps in queue order first (leaf queues in tree order), then the rest by
        submission."""
        with self.lock:
            out: list[dict] = []
            listed: set[str] = set()
            if state in (None, AppState.ACCEPTED):
                for leaf in self.engine.root.leaves():
                    if queue_name in (None, leaf.name):
                        for app_id in self.engine.pending(leaf.name):
                            listed.add(app_id)
                            out.append(self._snapshot(self.apps[app_id]))
            rest = sorted(
                (a for a in self.apps.values()
                 if a.id not in listed and queue_name in (None, a.queue)
                 and state in (None, a.state)),
                key=lambda a: a.seq,
            )
            out.extend(self._snapshot(a) for a in rest)
            return out

    def _snapshot(self, app: StoredApp) -> dict:
        rec = self.engine.apps.get(app.id)
        position = None
        reason = app.reason
        if app.state is AppState.ACCEPTED:
            if rec is not None and rec.state is not AppState.ACCEPTED:
                reason = rec.reason  # decided this cycle, being recorded
            else:
                position = self.engine.position(app.id) if rec is not None else None
                reason = self._waiting_reason(app.queue, position)
        return {
            "app": app,
            "executors": rec.held if rec else 0,
            "target": rec.target if rec else 0,
            "demand": rec.demand if rec else 0,
            "position": position,
            "reason": reason,
        }

    def _waiting_reason(self, queue_name: str, position: int | None) -> str:
        if position is None:
            return "accepted; joins its queue at the next scheduling cycle"
        if self.health.reachable is False:
            why = self.health.describe()
        else:
            why = self.engine.waiting.get(queue_name)
        if position == 1:
            return why or "next to start"
        ahead = f"{position - 1} app(s) ahead in {queue_name}"
        return f"{ahead}; {why}" if why else ahead

    def queue_rows(self) -> list[dict]:
        """Every queue, parents too: its settings (plans applied), usage and why it waits."""
        with self.lock:
            usage = self.engine.usage()
            rows = []
            for q in self.engine.root.walk():
                u = usage.get(q.name)
                waiting = self.engine.waiting.get(q.name) if q.is_leaf else None
                if self.health.reachable is False and u is not None and u.pending:
                    waiting = self.health.describe()
                rows.append({"queue": q, "usage": u, "waiting": waiting})
            return rows

    def events(self, app_id: str) -> list[EventRecord]:
        if self.snapshot(app_id) is None:
            raise NotFound(f"no app {app_id!r}")
        return self.store.events(app_id)

    def log_tail(self, app_id: str, lines: int) -> str:
        """The last ``lines`` lines of the driver's log (read from its last 256 KiB)."""
        app = self.stored_app(app_id)
        if app is None:
            raise NotFound(f"no app {app_id!r}")
        path, kind, state = app.log_path, app.kind, app.state
        if not path:
            raise NotFound(f"{app_id} has no driver log here (kind {kind}, state {state.value})")
        try:
            with open(path, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - 256 * 1024))
                text = f.read().decode("utf-8", "replace")
        except OSError as e:
            raise NotFound(f"driver log of {app_id} cannot be read: {e.strerror}") from None
        tail = text.splitlines()[-lines:] if lines > 0 else []
        return "".join(line + "\n" for line in tail)

    def health_row(self) -> dict:
        with self.lock:
            plan = self.config.plans[self.plan] if self.plan is not None else None
            return {
                "status": "ok" if self.health.reachable else "degraded",
                "cluster_reachable": self.health.reachable,
                "cluster": self.health.describe(),
                "master": self.config.cluster.master,
                "plan": plans.describe(plan) if plan else None,
                "apps": len(self.apps),
                "last_cycle_at": self.last_cycle_at,
            }
