"""The scheduler's host as room for the drivers it runs there, read once at start.

Client-mode drivers the scheduler starts (the spark-submit wrapper, Livy, Connect) run on its
host; the engine holds them to the memory measured here (``engine.host_room``). The host is
what the process may use: the machine's memory and cores, or its container's cgroup limits
when lower (cgroup v2 ``memory.max``/``cpu.max``, else v1 ``memory.limit_in_bytes`` and
``cpu.cfs_quota_us``/``cpu.cfs_period_us``), and the CPUs it may run on. The scheduler keeps
``SCHEDULER_MIB`` of the memory for itself; the rest is the drivers'.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..model import Resources

SCHEDULER_MIB = 1024  # the scheduler's own process, beside its drivers
CGROUP = Path("/sys/fs/cgroup")
_UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as a number near 2**63


@dataclass(frozen=True)
class Host:
    """What the host offers: ``cores`` and ``mem_mib`` (its own or its cgroup's, the lower),
    and what of them its drivers may hold (``for_drivers``)."""

    cores: int
    mem_mib: int
    source: str  # "host" or "cgroup": where the lower figure came from

    @property
    def for_drivers(self) -> Resources:
        return Resources(self.cores, max(self.mem_mib - SCHEDULER_MIB, 0))

    def describe(self) -> str:
        d = self.for_drivers
        return (f"{self.cores} cores/{self.mem_mib} MiB ({self.source}); {d.mem_mib} MiB for"
                f" client-mode drivers beside the scheduler's {SCHEDULER_MIB} MiB")


def measure(root: Path = CGROUP, meminfo: Path = Path("/proc/meminfo")) -> Host:
    """The host as this process sees it now."""
    mem, source = _machine_mib(meminfo), "host"
    limit = _cgroup_mib(root)
    if limit is not None and limit < mem:
        mem, source = limit, "cgroup"
    cores = _cpus()
    quota = _cgroup_cores(root)
    if quota is not None and quota < cores:
        cores, source = quota, "cgroup"
    return Host(max(cores, 1), mem, source)


def _machine_mib(meminfo: Path) -> int:
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    except (OSError, ValueError):
        return 0


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _cgroup_mib(root: Path) -> int | None:
    for path in (root / "memory.max", root / "memory" / "memory.limit_in_bytes"):
        text = _read(path)
        if text is None or text == "max":
            continue
        try:
            value = int(text)
        except ValueError:
            continue
        if value < _UNLIMITED:
            return value // (1 << 20)
    return None


def _cgroup_cores(root: Path) -> int | None:
    text = _read(root / "cpu.max")
    if text is not None:
        parts = text.split()
        if len(parts) == 2 and parts[0] != "max":
            return _whole_cores(parts[0], parts[1])
        return None
    quota = _read(root / "cpu" / "cpu.cfs_quota_us")
    period = _read(root / "cpu" / "cpu.cfs_period_us")
    if quota is None or period is None or quota.startswith("-"):
        return None
    return _whole_cores(quota, period)


def _whole_cores(quota: str, period: str) -> int | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    return max(-(-q // p), 1) if p > 0 and q > 0 else None
