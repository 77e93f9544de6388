"""Free ports on this machine: for the processes a local cluster, a test or a benchmark starts
(chosen before they bind, so a range lets processes sharing a machine keep out of each other's
way)."""

from __future__ import annotations

import socket
from collections.abc import Callable, Container, Iterable


def free_port(host: str = "127.0.0.1") -> int:
    """A port that is free now (the OS picks it)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    """True if a server may listen on ``port`` now. Bound with SO_REUSEADDR, as servers bind
    (Spark's master and workers, uvicorn, PostgreSQL): a port held only by connections in
    TIME_WAIT, as a server that has just died leaves it for a minute, is free to them."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def free_port_in(ports: Iterable[int], taken: Container[int] = frozenset(),
                 host: str = "127.0.0.1") -> int:
    """The first of ``ports`` not in ``taken`` that is free now (processes that must stay in
    a port range: tests and benchmarks running beside others)."""
    for port in ports:
        if port not in taken and port_free(port, host):
            return port
    raise RuntimeError("no free port in the range given")


def port_picker(ports: Iterable[int], host: str = "127.0.0.1") -> Callable[[], int]:
    """A function that hands out a free port of ``ports`` at each call, never one it handed out
    before (ports for several processes, chosen before any of them binds). ``ports`` is
    iterated at each call: a ``range``, not an iterator."""
    taken: set[int] = set()

    def pick() -> int:
        port = free_port_in(ports, taken, host)
        taken.add(port)
        return port

    return pick
