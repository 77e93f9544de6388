"""A list-then-watch cache of one kind of object, kept by a background thread.

The thread lists the objects, then watches from the list's resourceVersion with
``timeoutSeconds`` (resuming from the last version seen when a watch ends). A 410 Gone -- the
version is older than the server's history -- makes it list again. Failed requests are retried
with a growing pause (0.2 s doubling to 5 s); after ``max_failures`` in a row the cache counts as
unhealthy (``error`` says why) until a list or watch succeeds again. Objects are kept as the
API's JSON (dicts), keyed by uid.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Callable

from kubernetes.client.rest import ApiException
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import HTTPError

log = logging.getLogger("sessionsched.backend.kubernetes")

CONNECT_TIMEOUT_S = 5.0
BACKOFF_MIN_S, BACKOFF_MAX_S = 0.2, 5.0


class Gone(Exception):
    """The watch's resourceVersion is too old: list again."""


class Informer:
    """``list_fn``: a ``CoreV1Api`` list method (``list_node``, ``list_pod_for_all_namespaces``);
    ``kwargs`` are passed to every list and watch (e.g. ``label_selector``)."""

    def __init__(self, name: str, list_fn: Callable, *, watch_timeout_s: int = 300,
                 max_failures: int = 5, **kwargs) -> None:
        self.name = name
        self._list_fn = list_fn
        self._kwargs = kwargs
        self._watch_timeout_s = watch_timeout_s
        self._max_failures = max_failures
        self._lock = threading.Lock()
        self._objects: dict[str, dict] = {}
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._resp = None
        self._failures = 0
        self.error: str | None = None
        self.lists = 0  # how many times it listed (the first, then after each 410)
        self._thread = threading.Thread(target=self._run, name=f"informer-{name}", daemon=True)

    def start(self) -> Informer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        conn = getattr(self._resp, "_connection", None)
        sock = getattr(conn, "sock", None)
        if sock is not None:
            try:  # unblocks the thread's read at once (urllib3's own shutdown() is SHUT_RD,
                # which does not wake a blocked read on Linux)
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed
        self._thread.join(10)

    # --- reading ------------------------------------------------------------------------------

    def wait_synced(self, timeout_s: float) -> bool:
        return self._synced.wait(timeout_s)

    @property
    def healthy(self) -> bool:
        return self._synced.is_set() and self._failures < self._max_failures

    def snapshot(self) -> list[dict]:
        with self._lock:
            return list(self._objects.values())

    # --- the thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        rv: str | None = None
        pause = BACKOFF_MIN_S
        while not self._stop.is_set():
            try:
                if rv is None:
                    rv = self._list()
                rv = self._watch(rv)
                self._ok()
                pause = BACKOFF_MIN_S
                continue
            except Gone:
                log.info("%s: watch expired (410), listing again", self.name)
                rv = None
                continue
            except ApiException as e:
                self._failed(f"{e.status} {e.reason}")
            except (HTTPError, OSError, ValueError) as e:
                if self._stop.is_set():
                    return
                self._failed(str(e) or type(e).__name__)
            self._stop.wait(pause)
            pause = min(pause * 2, BACKOFF_MAX_S)

    def _ok(self) -> None:
        self._failures = 0
        self.error = None

    def _failed(self, why: str) -> None:
        self._failures += 1
        self.error = why
        level = logging.WARNING if self._failures == self._max_failures else logging.DEBUG
        log.log(level, "%s: list/watch failed (%d in a row): %s", self.name, self._failures, why)

    def _list(self) -> str:
        resp = self._list_fn(_preload_content=False,
                             _request_timeout=(CONNECT_TIMEOUT_S, self._watch_timeout_s),
                             **self._kwargs)
        body = json.loads(resp.data)
        objects = {o["metadata"]["uid"]: o for o in body.get("items") or []}
        with self._lock:
            self._objects = objects
        self.lists += 1
        self._ok()
        self._synced.set()
        return body["metadata"]["resourceVersion"]

    def _watch(self, rv: str) -> str:
        """One watch request from ``rv``; returns the last version seen when it ends."""
        resp = self._list_fn(watch=True, resource_version=rv,
                             timeout_seconds=self._watch_timeout_s, allow_watch_bookmarks=True,
                             _preload_content=False,
                             _request_timeout=(CONNECT_TIMEOUT_S, self._watch_timeout_s + 10),
                             **self._kwargs)
        self._resp = resp
        try:
            if self._stop.is_set():  # stop() came before _resp was set: it could not cut it
                return rv
            for line in iter_resp_lines(resp):
                if self._stop.is_set():
                    break
                event = json.loads(line)
                obj = event.get("object") or {}
                kind = event.get("type")
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        raise Gone()
                    raise ApiException(status=obj.get("code"), reason=obj.get("message"))
                rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                if kind == "BOOKMARK":
                    continue
                uid = obj["metadata"]["uid"]
                with self._lock:
                    if kind == "DELETED":
                        self._objects.pop(uid, None)
                    else:
                        self._objects[uid] = obj
                self._failures = 0
        finally:
            self._resp = None
            resp.close()
        return rv
