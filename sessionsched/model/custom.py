"""Custom resources (GPUs, FPGAs, any resource name Spark knows) beside cores and memory.

``Resources.custom`` holds them as a tuple of (name, amount) pairs sorted by name, with no
zero amount, so equal amounts compare and hash equal however they were reached. Most apps and
clusters have none: the tuple is empty and the arithmetic skips it (``Resources`` tests its
truth first), so cores and memory cost what they did. Amounts are whole numbers: Spark
requires whole amounts per executor, per driver and per worker (a task's share may be a
fraction: ``spark.resource_props``).
"""

from __future__ import annotations

from collections.abc import Mapping

Custom = tuple[tuple[str, int], ...]


def custom_of(amounts: Mapping[str, int]) -> Custom:
    """The canonical pairs of ``amounts`` (name -> whole amount): sorted, zeros left out."""
    return tuple(sorted((k, int(v)) for k, v in amounts.items() if v))


def combine(a: Custom, b: Custom, sign: int) -> Custom:
    """``a + sign * b``, canonical."""
    if not b:
        return a
    if not a and sign > 0:
        return b
    out = dict(a)
    for k, v in b:
        out[k] = out.get(k, 0) + sign * v
    return tuple(sorted((k, v) for k, v in out.items() if v))


def scaled(a: Custom, n: int) -> Custom:
    return tuple((k, v * n) for k, v in a) if n else ()


def covers(need: Custom, have: Custom) -> bool:
    """Every amount of ``need`` is there in ``have``."""
    got = dict(have)
    return all(v <= got.get(k, 0) for k, v in need)


def amount(custom: Custom, name: str, default: float = 0) -> float:
    """``name``'s amount in ``custom`` (``default`` where it has none)."""
    for k, v in custom:
        if k == name:
            return v
    return default


def describe(custom: Custom) -> str:
    """``/2 gpu/1 fpga``: what follows ``N cores/M MiB`` in a message; empty for none."""
    return "".join(f"/{v} {k}" for k, v in custom)
