"""The test servers' ports: each pytest-xdist worker chooses in a slice of a range of its own.

A port is checked free when it is chosen and bound only once its server is up - seconds later
for a JVM, after ``initdb`` for PostgreSQL - and two workers choosing in one range were once
given the same port meanwhile: the second server could not bind it."""

from __future__ import annotations

import os


def worker_share(ports: range) -> range:
    """This worker's slice of ``ports`` (all of them without workers). A replacement for a
    crashed worker (``gw3`` of three) shares a slice with a live one, as they all shared the
    range before."""
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if count <= 1 or not worker[2:].isdigit():
        return ports
    size = len(ports) // count
    first = ports.start + (int(worker[2:]) % count) * size
    return range(first, first + size)
