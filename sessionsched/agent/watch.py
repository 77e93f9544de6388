"""The agent's watch (the change-driven protocol, docs/design/agent-protocol.md): a daemon thread
that keeps one request open to ``/api/v1/agent/watch``, holding the version of the last answer it
got. The server answers when the scheduler changes what the app is told (its grant, a reclaim
order, its state) or after the keep-alive; the answer is handed to the agent's loop, which
applies it on its own thread (every Spark call stays there).

Answers are kept in order (one request at a time); reclaim orders of answers the loop has not
taken yet are kept, not overwritten. A failed watch is tried again with backoff; the loop's
reports say when the server is unreachable, and a 404 (the server lost the app) is the loop's
to handle by registering again -- the watch waits and asks again. While watches keep failing
(``failing``: e.g. a proxy between driver and scheduler that cuts held requests short) the
loop falls back to heartbeats, whose answers then give the grant.
"""

from __future__ import annotations

import dataclasses
import threading

from . import protocol
from .protocol import Answer
from .transport import JsonClient, Refused, Unreachable

WAIT_MARGIN_S = 10.0  # on top of the keep-alive: how long a held watch may take to come back
FAILING_AFTER = 3  # consecutive failed watches: the agent heartbeats until one succeeds


class Watch:
    def __init__(self, client: JsonClient, app_id: str, version: int, keepalive_s: float,
                 woken: threading.Event, stop: threading.Event, max_backoff_s: float = 15.0):
        """``woken`` is set when an answer came in; ``stop`` ends the thread."""
        self.client = client
        self.app_id = app_id
        self.version = version
        self.keepalive_s = keepalive_s
        self.max_backoff_s = max_backoff_s
        self._woken = woken
        self._stop = stop
        self._lock = threading.Lock()
        self._answer: Answer | None = None
        self.answered = 0
        self.failures = 0  # consecutive failed watches
        self._thread = threading.Thread(target=self._run, name="sessionsched-agent-watch",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def failing(self) -> bool:
        return self.failures >= FAILING_AFTER

    def take(self) -> Answer | None:
        """The newest answer not taken yet (with every reclaim order since the last take)."""
        with self._lock:
            answer, self._answer = self._answer, None
            return answer

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                body = self.client.post(
                    protocol.WATCH_PATH,
                    protocol.watch_body(self.app_id, self.version, self.keepalive_s),
                    timeout_s=self.keepalive_s + WAIT_MARGIN_S)
                answer = Answer.from_json(body, self.keepalive_s)
            except (Refused, Unreachable, ValueError, TypeError):
                self.failures += 1
                self._stop.wait(min(2.0 ** self.failures * 0.25, self.max_backoff_s))
                continue
            self.failures = 0
            self.answered += 1
            self.version = answer.version
            if answer.keepalive_s is not None:
                self.keepalive_s = answer.keepalive_s
            with self._lock:
                if self._answer is not None and self._answer.reclaim:
                    answer = dataclasses.replace(
                        answer, reclaim=self._answer.reclaim + answer.reclaim)
                self._answer = answer
            self._woken.set()
