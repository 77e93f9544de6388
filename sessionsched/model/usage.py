"""What one app used, counted as it happens: the memory cluster counts it (the simulator's
accounting) and the server counts it from agents' reports (``service/usage_meter/``).

What is counted (docs/operator/usage.md has the same definitions for the server):
- ``held_core_s`` / ``held_gib_s``: executor cores (GiB) from the moment an executor is up
  (registered with its driver: Spark's ``addTime``) until it is gone, whatever it does.
  An executor still starting holds room in the cluster but is not counted (Spark's status store
  does not know it yet either).
- ``busy_core_s``: cores running tasks (one core per task: ``spark.task.cpus=1``), so
  ``idle_core_s = held_core_s - busy_core_s`` is the part of held time no task used, including
  the free cores of an executor that runs fewer tasks than it has cores.
- ``reclaimed_core_s``: the part of ``busy_core_s`` run by tasks that a reclaim killed (their
  executor was killed by a reclaim order or at a decommission deadline): work done and thrown
  away, run again elsewhere. ``busy_core_s - reclaimed_core_s`` is the work that counted.
  ``reclaimed_executors``: executors a reclaim killed with tasks on them or not.
- ``driver_core_s`` / ``driver_gib_s``: the driver's cores (memory) from when it has its room
  (a driver slot, or cluster cores for an in-cluster driver) until it exits.
- ``queued_s``: from the submission until the scheduler launched the driver.

The counters integrate lazily: each change first adds what the old levels held since the last
change, so counting costs one multiplication per change and nothing per cycle.

The server also adds the same growth up per hour, queue and user (``HOURLY``, the store's
``usage_hours`` rows, kept beyond the apps' rows): ``hourly_growth`` splits what the levels
held over an interval at the hours' edges (the levels are constant over it, so the split is
exact), and ``hours_of`` does the same for time queued.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB_PER_GIB = 1024.0
HOUR_S = 3600.0


@dataclass
class AppUsage:
    since: float = 0.0  # the last change; the levels below held since then
    held_cores: int = 0
    held_mib: int = 0
    busy_cores: int = 0
    driver_cores: int = 0
    driver_mib: int = 0
    held_core_s: float = 0.0
    held_mib_s: float = 0.0
    busy_core_s: float = 0.0
    driver_core_s: float = 0.0
    driver_mib_s: float = 0.0
    reclaimed_core_s: float = 0.0
    reclaimed_executors: int = 0
    queued_s: float = 0.0  # from the submission until the launch (set by whoever counts it)

    def at(self, now: float) -> AppUsage:
        """Add what the current levels held up to ``now``; returns self."""
        dt = now - self.since
        if dt > 0:
            self.held_core_s += self.held_cores * dt
            self.held_mib_s += self.held_mib * dt
            self.busy_core_s += self.busy_cores * dt
            self.driver_core_s += self.driver_cores * dt
            self.driver_mib_s += self.driver_mib * dt
            self.since = now
        return self

    def executor(self, now: float, cores: int, mib: int) -> None:
        """An executor of ``cores``/``mib`` came up (positive) or left (negative)."""
        self.at(now)
        self.held_cores += cores
        self.held_mib += mib

    def tasks(self, now: float, n: int) -> None:
        """``n`` tasks started (positive) or ended, finished or killed (negative)."""
        self.at(now)
        self.busy_cores += n

    def driver(self, now: float, cores: int, mib: int) -> None:
        self.at(now)
        self.driver_cores += cores
        self.driver_mib += mib

    def levels(self, now: float, held_cores: int, held_mib: int, busy_cores: int) -> None:
        """The executors' levels as a report has them now (the server's way of counting: each
        report says what the app holds, not what changed)."""
        self.at(now)
        self.held_cores, self.held_mib, self.busy_cores = held_cores, held_mib, busy_cores

    def reclaimed(self, lost_core_s: float, executors: int = 1) -> None:
        self.reclaimed_core_s += lost_core_s
        self.reclaimed_executors += executors

    def to_json(self) -> dict[str, float | int]:
        """Everything, levels included, to be read back by ``from_json`` (the store's column)."""
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: dict | None) -> AppUsage:
        return cls(**{k: v for k, v in (data or {}).items() if k in _FIELDS})

    def counted(self) -> tuple[float, ...]:
        """The figures of ``COUNTED``, unrounded, in that order (the counters' growth)."""
        return (self.held_core_s, self.busy_core_s, self.held_core_s - self.busy_core_s,
                self.reclaimed_core_s, self.held_mib_s / MIB_PER_GIB, self.driver_core_s,
                self.driver_mib_s / MIB_PER_GIB)

    def figures(self) -> dict[str, float | int]:
        """The counters as reported (``usage`` in the simulator's JSON), to the millisecond."""
        return {
            "held_core_s": round(self.held_core_s, 3),
            "busy_core_s": round(self.busy_core_s, 3),
            "idle_core_s": round(self.held_core_s - self.busy_core_s, 3),
            "reclaimed_core_s": round(self.reclaimed_core_s, 3),
            "reclaimed_executors": self.reclaimed_executors,
            "held_gib_s": round(self.held_mib_s / MIB_PER_GIB, 3),
            "driver_core_s": round(self.driver_core_s, 3),
            "driver_gib_s": round(self.driver_mib_s / MIB_PER_GIB, 3),
            "queued_s": round(self.queued_s, 3),
        }


_FIELDS = tuple(AppUsage.__dataclass_fields__)
# The figures that only grow, as ``AppUsage.counted`` gives them (Prometheus counters' kinds).
COUNTED = ("held_core_s", "busy_core_s", "idle_core_s", "reclaimed_core_s", "held_gib_s",
           "driver_core_s", "driver_gib_s")


# What one hour of one (queue, user) adds up (the store's ``usage_hours`` columns), in this
# order: ``apps`` counts the apps submitted in the hour; ``idle_core_s`` is held - busy.
HOURLY = ("apps", "held_core_s", "busy_core_s", "reclaimed_core_s", "reclaimed_executors",
          "held_gib_s", "driver_core_s", "driver_gib_s", "queued_s")
_HELD, _BUSY, _HELD_GIB, _DRIVER, _DRIVER_GIB = (HOURLY.index(k) for k in (
    "held_core_s", "busy_core_s", "held_gib_s", "driver_core_s", "driver_gib_s"))
APPS, QUEUED = HOURLY.index("apps"), HOURLY.index("queued_s")
RECLAIMED, RECLAIMED_EXECUTORS = HOURLY.index("reclaimed_core_s"), HOURLY.index(
    "reclaimed_executors")


def hour_of(t: float) -> float:
    """The start of the (UTC) hour ``t`` falls in."""
    return t - t % HOUR_S


def hours_of(start: float, end: float) -> list[tuple[float, float]]:
    """(hour start, seconds of [start, end) inside that hour), earliest first."""
    out = []
    while end > start:
        hour = hour_of(start)
        cut = min(end, hour + HOUR_S)
        out.append((hour, cut - start))
        start = cut
    return out


def hourly_growth(u: AppUsage, now: float) -> list[tuple[float, list[float]]]:
    """What ``u.at(now)`` will add, per hour: (hour start, ``HOURLY`` figures)."""
    if not (u.held_cores or u.busy_cores or u.driver_cores or u.held_mib or u.driver_mib):
        return []
    out = []
    for hour, dt in hours_of(u.since, now):
        row = [0.0] * len(HOURLY)
        row[_HELD], row[_BUSY] = u.held_cores * dt, u.busy_cores * dt
        row[_HELD_GIB] = u.held_mib * dt / MIB_PER_GIB
        row[_DRIVER], row[_DRIVER_GIB] = u.driver_cores * dt, u.driver_mib * dt / MIB_PER_GIB
        out.append((hour, row))
    return out


def hourly_figures(row: list[float]) -> dict[str, float | int]:
    """An hour's (or a sum of hours') ``HOURLY`` figures as reported, with ``idle_core_s``."""
    f = dict(zip(HOURLY, row, strict=True))
    out: dict[str, float | int] = {"apps": int(round(f.pop("apps")))}
    for k in ("held_core_s", "busy_core_s"):
        out[k] = round(f[k], 3)
    out["idle_core_s"] = round(f["held_core_s"] - f["busy_core_s"], 3)
    out["reclaimed_core_s"] = round(f["reclaimed_core_s"], 3)
    out["reclaimed_executors"] = int(round(f["reclaimed_executors"]))
    for k in ("held_gib_s", "driver_core_s", "driver_gib_s", "queued_s"):
        out[k] = round(f[k], 3)
    return out
