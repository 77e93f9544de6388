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
- custom resources (GPUs, any name Spark knows; ``model.custom``), per name: ``{name}_held_s``
  (the executors' amount × time held, as ``held_core_s``), ``{name}_busy_s`` (by the tasks'
  amount: a task of ``spark.task.resource.gpu.amount=0.5`` running 10 s is 5 gpu-busy-seconds;
  the server, which hears per executor whether it is busy, counts a busy executor's whole
  amount), ``{name}_idle_s``, ``{name}_reclaimed_s`` and ``{name}_driver_s``. Kept in maps
  keyed by the name (``held_res`` and the like), so a new name needs no new field or column;
  an app with none has empty maps and counts what it did.

The counters integrate lazily: each change first adds what the old levels held since the last
change, so counting costs one multiplication per change and nothing per cycle.

The server also adds the same growth up per hour, queue and user (``HOURLY``, the store's
``usage_hours`` rows, kept beyond the apps' rows): ``hourly_growth`` splits what the levels
held over an interval at the hours' edges (the levels are constant over it, so the split is
exact), and ``hours_of`` does the same for time queued.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for the annotations only
    from . import Resources

MIB_PER_GIB = 1024.0
HOUR_S = 3600.0

# A custom resource's counters, in this order (``AppUsage.res_s``, the store's
# ``usage_hour_resources`` columns): its amount × seconds held by the executors, run by tasks,
# lost to reclaim, held by the driver.
RES_HOURLY = ("held_s", "busy_s", "reclaimed_s", "driver_s")
_R_HELD, _R_BUSY, _R_RECLAIMED, _R_DRIVER = range(4)
_NOT_CUSTOM = ("cores", "memory")
# Tiny sums of fractions left over when a level returns to zero (0.1 + 0.2 - 0.3).
_EPS = 1e-9


def _shift(level: dict[str, float], amounts: Iterable[tuple[str, float]], n: float) -> None:
    """``level += n × amounts``, keeping no zero: an app with none stays empty (and free)."""
    for name, amount in amounts:
        v = level.get(name, 0.0) + n * amount
        if abs(v) < _EPS:
            level.pop(name, None)
        else:
            level[name] = v


def idle_of(held: float, busy: float) -> float:
    """Idle as reported: held less busy as each is reported (to the millisecond), so that the
    three figures add up as printed; rounding held - busy on its own could miss by 0.001."""
    return round(round(held, 3) - round(busy, 3), 3)


def resource_figures(res_s: Mapping[str, list[float]]) -> dict[str, float]:
    """The per-resource figures as reported (``{name}_held_s`` ...), names in order."""
    out: dict[str, float] = {}
    for name in sorted(res_s):
        held, busy, reclaimed, driver = res_s[name]
        out[f"{name}_held_s"] = round(held, 3)
        out[f"{name}_busy_s"] = round(busy, 3)
        out[f"{name}_idle_s"] = idle_of(held, busy)
        out[f"{name}_reclaimed_s"] = round(reclaimed, 3)
        out[f"{name}_driver_s"] = round(driver, 3)
    return out


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
    # Custom resources (module doc): the levels (name -> amount held by the executors, run by
    # tasks, held by the driver) and the counters (name -> ``RES_HOURLY``); empty for most.
    held_res: dict[str, float] = field(default_factory=dict)
    busy_res: dict[str, float] = field(default_factory=dict)
    driver_res: dict[str, float] = field(default_factory=dict)
    res_s: dict[str, list[float]] = field(default_factory=dict)

    def at(self, now: float) -> AppUsage:
        """Add what the current levels held up to ``now``; returns self."""
        dt = now - self.since
        if dt > 0:
            self.held_core_s += self.held_cores * dt
            self.held_mib_s += self.held_mib * dt
            self.busy_core_s += self.busy_cores * dt
            self.driver_core_s += self.driver_cores * dt
            self.driver_mib_s += self.driver_mib * dt
            if self.held_res or self.busy_res or self.driver_res:
                for i, level in ((_R_HELD, self.held_res), (_R_BUSY, self.busy_res),
                                 (_R_DRIVER, self.driver_res)):
                    for name, amount in level.items():
                        self._res(name)[i] += amount * dt
            self.since = now
        return self

    def _res(self, name: str) -> list[float]:
        row = self.res_s.get(name)
        if row is None:
            row = self.res_s[name] = [0.0] * len(RES_HOURLY)
        return row

    def executor(self, now: float, cores: int, mib: int,
                 custom: Iterable[tuple[str, int]] = ()) -> None:
        """An executor of ``cores``/``mib`` (and ``custom`` amounts, of the same sign) came up
        (positive) or left (negative)."""
        self.at(now)
        self.held_cores += cores
        self.held_mib += mib
        _shift(self.held_res, custom, 1)

    def executor_of(self, now: float, size: Resources, n: int) -> None:
        """``n`` executors of ``size`` came up (positive) or left (negative)."""
        self.executor(now, size.cores * n, size.mem_mib * n,
                      [(k, v * n) for k, v in size.custom] if size.custom else ())

    def driver_of(self, now: float, size: Resources, n: int) -> None:
        """The driver of ``size`` has its room (``n`` 1) or is gone (-1)."""
        self.driver(now, size.cores * n, size.mem_mib * n,
                    [(k, v * n) for k, v in size.custom] if size.custom else ())

    def tasks(self, now: float, n: int,
              per_task: Mapping[str, float] | Iterable[tuple[str, float]] = ()) -> None:
        """``n`` tasks started (positive) or ended, finished or killed (negative); each task
        takes ``per_task`` of the custom resources (``spark.task.resource.{name}.amount``;
        ``cores`` and ``memory`` entries, which the memory backend's task amounts list
        first, are not custom resources and are left out)."""
        self.at(now)
        self.busy_cores += n
        if per_task:
            pairs = per_task.items() if isinstance(per_task, Mapping) else per_task
            _shift(self.busy_res, [(k, v) for k, v in pairs if k not in _NOT_CUSTOM], n)

    def driver(self, now: float, cores: int, mib: int,
               custom: Iterable[tuple[str, int]] = ()) -> None:
        self.at(now)
        self.driver_cores += cores
        self.driver_mib += mib
        _shift(self.driver_res, custom, 1)

    def levels(self, now: float, held_cores: int, held_mib: int, busy_cores: int,
               held_res: Mapping[str, float] | None = None,
               busy_res: Mapping[str, float] | None = None) -> None:
        """The executors' levels as a report has them now (the server's way of counting: each
        report says what the app holds, not what changed)."""
        self.at(now)
        self.held_cores, self.held_mib, self.busy_cores = held_cores, held_mib, busy_cores
        if held_res or self.held_res:
            self.held_res = {k: v for k, v in (held_res or {}).items() if v}
        if busy_res or self.busy_res:
            self.busy_res = {k: v for k, v in (busy_res or {}).items() if v}

    def reclaimed(self, lost_core_s: float, executors: int = 1,
                  lost_res_s: Mapping[str, float] | None = None) -> None:
        self.reclaimed_core_s += lost_core_s
        self.reclaimed_executors += executors
        for name, lost in (lost_res_s or {}).items():
            self._res(name)[_R_RECLAIMED] += lost

    def tasks_lost(self, task_s: float,
                   per_task: Mapping[str, float] | Iterable[tuple[str, float]] = ()) -> None:
        """An executor a reclaim killed, its tasks' run time so far ``task_s`` (summed over
        its tasks) thrown away: in core-seconds (one core a task) and, by the tasks' amounts
        (as ``tasks`` takes them), in each custom resource's seconds."""
        pairs = per_task.items() if isinstance(per_task, Mapping) else per_task
        self.reclaimed(task_s, 1, {k: task_s * v for k, v in pairs if k not in _NOT_CUSTOM})

    def to_json(self) -> dict[str, float | int]:
        """Everything, levels included, to be read back by ``from_json`` (the store's column).
        The maps are copied: the column is written on another thread while counting goes on."""
        out = dict(self.__dict__)
        if self.res_s or self.held_res or self.busy_res or self.driver_res:
            out["held_res"], out["busy_res"] = dict(self.held_res), dict(self.busy_res)
            out["driver_res"] = dict(self.driver_res)
            out["res_s"] = {k: list(v) for k, v in self.res_s.items()}
        else:  # no custom resource: the column as it was
            for k in ("held_res", "busy_res", "driver_res", "res_s"):
                del out[k]
        return out

    @classmethod
    def from_json(cls, data: dict | None) -> AppUsage:
        u = cls(**{k: v for k, v in (data or {}).items() if k in _FIELDS})
        if u.res_s or u.held_res or u.busy_res or u.driver_res:  # copies: never the caller's
            u.held_res, u.busy_res = dict(u.held_res), dict(u.busy_res)
            u.driver_res = dict(u.driver_res)
            u.res_s = {k: list(v) for k, v in u.res_s.items()}
        return u

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
            "idle_core_s": idle_of(self.held_core_s, self.busy_core_s),
            "reclaimed_core_s": round(self.reclaimed_core_s, 3),
            "reclaimed_executors": self.reclaimed_executors,
            "held_gib_s": round(self.held_mib_s / MIB_PER_GIB, 3),
            "driver_core_s": round(self.driver_core_s, 3),
            "driver_gib_s": round(self.driver_mib_s / MIB_PER_GIB, 3),
            "queued_s": round(self.queued_s, 3),
            **(resource_figures(self.res_s) if self.res_s else {}),
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


def hourly_resource_growth(u: AppUsage, now: float) -> list[tuple[float, str, list[float]]]:
    """What ``u.at(now)`` will add to the custom resources' counters, per hour: (hour start,
    name, ``RES_HOURLY`` figures); empty for an app with none."""
    if not (u.held_res or u.busy_res or u.driver_res):
        return []
    out = []
    for hour, dt in hours_of(u.since, now):
        rows: dict[str, list[float]] = {}
        for i, level in ((_R_HELD, u.held_res), (_R_BUSY, u.busy_res),
                         (_R_DRIVER, u.driver_res)):
            for name, amount in level.items():
                rows.setdefault(name, [0.0] * len(RES_HOURLY))[i] += amount * dt
        out.extend((hour, name, row) for name, row in sorted(rows.items()))
    return out


def hourly_figures(row: list[float]) -> dict[str, float | int]:
    """An hour's (or a sum of hours') ``HOURLY`` figures as reported, with ``idle_core_s``."""
    f = dict(zip(HOURLY, row, strict=True))
    out: dict[str, float | int] = {"apps": int(round(f.pop("apps")))}
    for k in ("held_core_s", "busy_core_s"):
        out[k] = round(f[k], 3)
    out["idle_core_s"] = idle_of(f["held_core_s"], f["busy_core_s"])
    out["reclaimed_core_s"] = round(f["reclaimed_core_s"], 3)
    out["reclaimed_executors"] = int(round(f["reclaimed_executors"]))
    for k in ("held_gib_s", "driver_core_s", "driver_gib_s", "queued_s"):
        out[k] = round(f[k], 3)
    return out
