"""Answers encoded once and shared by every reader who asks for the same thing while it is
still good, with an ETag (a hash of the bytes) that turns an unchanged answer into a 304.

Why: a dashboard left open polls the same few reads every two seconds; fifty of them asked the
server to build the same lists fifty times over, on the event loop and the interpreter lock the
cycle's thread needs too (benchmarks/dashboard_load.py: the cycle's p99 went from 42 to 555 ms).
Built once per published view (or once per second, for what the page may see that old), the
answer costs each further reader a lookup and a send.

An entry is good while ``fresh(entry)`` says so: the read view it was built from is still the
one published (``version``), or it is younger than the age the reader accepts. Builds of one key
are one at a time (a thread-pool read that fifty readers ask for at once is built once, the
others wait for it); a build that raises stores nothing.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from fastapi import Request, Response
from starlette.concurrency import run_in_threadpool

KEPT = 256  # entries at most: a key is a read's query (queue, state, window...)
MAX_AGE_S = 300  # the oldest answer a reader may ask for (``Cache-Control: max-age``)


@dataclass(frozen=True)
class Answer:
    body: bytes
    etag: str
    version: int | None  # the read view's it was built from (None: not tied to one)
    at: float  # time.monotonic() when built

    @property
    def age(self) -> float:
        return time.monotonic() - self.at


class SharedAnswers:
    def __init__(self, kept: int = KEPT):
        self._kept = kept
        self._entries: dict[Hashable, Answer] = {}
        self._locks: dict[Hashable, threading.Lock] = {}
        self._guard = threading.Lock()
        self.builds = 0  # how many answers were built (tests, benchmarks)

    def get(self, key: Hashable, fresh: Callable[[Answer], bool], build: Callable[[], bytes],
            version: int | None = None) -> Answer:
        """The kept answer for ``key`` if ``fresh`` holds for it, else one built now (by
        ``build``; ``version``: the read view's version read before building)."""
        found = self._entries.get(key)
        if found is not None and fresh(found):
            return found
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            found = self._entries.get(key)  # built by another reader meanwhile?
            if found is not None and fresh(found):
                return found
            body = build()
            etag = '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'
            if found is not None and found.etag == etag:
                body = found.body  # the same bytes: keep one copy
            made = Answer(body, etag, version, time.monotonic())
            if len(self._entries) >= self._kept and key not in self._entries:
                # Rare (many distinct queries): the next reads refill. The builds' locks go
                # too (a build under way keeps its own), or every query ever asked keeps one.
                self._entries.clear()
                with self._guard:
                    self._locks = {key: lock}
            self._entries[key] = made
            self.builds += 1
            return made

    def kept(self, key: Hashable, fresh: Callable[[Answer], bool]) -> Answer | None:
        """The kept answer if it is still good (no wait, no build)."""
        found = self._entries.get(key)
        return found if found is not None and fresh(found) else None

    async def within_off_loop(self, key: Hashable, max_age: float,
                              build: Callable[[], bytes]) -> Answer:
        """``within``, its build (and its wait for another reader's build) in the thread pool:
        for a build that waits on the store, which must not hold up the event loop."""
        found = self.kept(key, lambda a: a.age <= max_age)
        if found is not None:
            return found
        return await run_in_threadpool(self.within, key, max_age, build)

    def of_version(self, key: Hashable, version: int, build: Callable[[], bytes]) -> Answer:
        """The answer built from the read view ``version`` (the one published now)."""
        return self.get(key, lambda a: a.version == version, build, version)

    def within(self, key: Hashable, max_age: float, build: Callable[[], bytes]) -> Answer:
        """An answer at most ``max_age`` seconds old."""
        return self.get(key, lambda a: a.age <= max_age, build)


def accepted_age(request: Request) -> float:
    """The age the reader accepts: its ``Cache-Control: max-age=N`` (capped at ``MAX_AGE_S``),
    0 without one (an answer built now)."""
    for part in request.headers.get("cache-control", "").split(","):
        name, _, value = part.strip().partition("=")
        if name.lower() == "max-age":
            try:
                return max(0.0, min(float(value.strip('"')), MAX_AGE_S))
            except ValueError:
                return 0.0
    return 0.0


def matches(request: Request, etag: str) -> bool:
    """Whether the reader holds this answer already (``If-None-Match``; weak tags compare
    equal, RFC 9110's weak comparison)."""
    given = request.headers.get("if-none-match")
    if not given:
        return False
    tags = {t.strip().removeprefix("W/") for t in given.split(",")}
    return "*" in tags or etag in tags


def respond(request: Request, found: Answer, media_type: str = "application/json",
            headers: dict[str, str] | None = None) -> Response:
    """The answer, or a 304 when the reader holds it already; ``Age`` says how old it is
    when it was not built for this reader's view."""
    out = {"ETag": found.etag, **(headers or {})}
    if found.version is None:
        out["Age"] = str(int(found.age))
    if matches(request, found.etag):
        return Response(status_code=304, headers=out)
    return Response(found.body, media_type=media_type, headers=out)


def shared(request: Request) -> SharedAnswers:
    """The server's own (``app.state``): two servers in one process never share answers."""
    state = request.app.state
    found = getattr(state, "shared_answers", None)
    if found is None:
        found = state.shared_answers = SharedAnswers()
    return found
