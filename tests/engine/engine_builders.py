"""Small builders for engine tests: apps, queue trees, and a driver that steps a Scheduler.

``app("a").priority(10).submitted(0).spec()`` -> AppSpec. Submission order (``seq``) is the
order the builders were created in, unless ``.seq(n)`` says otherwise.
``tree(leaf("etl", policy="priority"), parent("sci", leaf("nb")))`` -> a root Queue with full
dotted names (``root.etl``, ``root.sci.nb``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

from sessionsched.engine import (
    CapacityChanged,
    ExecutorsChanged,
    LaunchDriver,
    MarkState,
    Reclaim,
    Scheduler,
    SetTarget,
    StopDriver,
    Submitted,
)
from sessionsched.model import (
    Admission,
    AppSpec,
    Executor,
    Gang,
    GangStyle,
    NodeSort,
    Policy,
    Queue,
    Resources,
    Worker,
)

_seq = itertools.count(1)


class app:  # noqa: N801 - reads as a noun in tables: app("a").priority(10)
    def __init__(self, app_id: str):
        self._spec = AppSpec(
            app_id=app_id,
            queue="root.q",
            seq=next(_seq),
            submitted_at=0.0,
            driver=Resources(1, 1024),
            executor=Resources(1, 1024),
        )

    def _set(self, **kw) -> app:
        self._spec = replace(self._spec, **kw)
        return self

    def queue(self, name: str) -> app:
        return self._set(queue=name if name.startswith("root") else f"root.{name}")

    def priority(self, p: int) -> app:
        return self._set(priority=p)

    def user(self, name: str) -> app:
        return self._set(user=name)

    def submitted(self, t: float) -> app:
        return self._set(submitted_at=t)

    def seq(self, n: int) -> app:
        return self._set(seq=n)

    def in_cluster(self, cores: int = 1, mem_mib: int = 1024, custom: tuple = ()) -> app:
        return self._set(driver=Resources(cores, mem_mib, custom), driver_in_cluster=True)

    def notebook(self) -> app:
        """A notebook's session: its driver runs in the notebook's kernel, with its user."""
        return self._set(driver_with_user=True)

    def session(self) -> app:
        """A Livy or Connect session: interactive, its driver on the scheduler's host."""
        return self._set(interactive=True)

    def driver_mem(self, mem_mib: int, overhead_mib: int | None = None) -> app:
        """spark.driver.memory (and spark.driver.memoryOverhead, if given) in MiB."""
        return self._set(driver=Resources(self._spec.driver.cores, mem_mib),
                         driver_overhead_mib=overhead_mib)

    def executor(self, cores: int, mem_mib: int = 1024, custom: tuple = ()) -> app:
        """``custom``: (name, amount) pairs such as (("gpu", 1),)."""
        return self._set(executor=Resources(cores, mem_mib, custom))

    def min(self, n: int) -> app:
        return self._set(min_executors=n)

    def max(self, n: int) -> app:
        return self._set(max_executors=n)

    def slots_max(self, n: int) -> app:
        return self._set(slots_max=n)

    def gang(self, n: int, timeout_s: float = 900.0, style: str = "soft") -> app:
        return self._set(gang=Gang(n, timeout_s, GangStyle(style)))

    def spec(self) -> AppSpec:
        return self._spec

    @property
    def id(self) -> str:
        return self._spec.app_id


@dataclass
class _Q:
    name: str
    children: tuple[_Q, ...]
    settings: dict


def leaf(name: str, **settings) -> _Q:
    return _Q(name, (), settings)


def parent(name: str, *children: _Q, **settings) -> _Q:
    return _Q(name, children, settings)


_ENUMS = {"policy": Policy, "admission": Admission, "node_sort": NodeSort}


def _build(q: _Q, prefix: str) -> Queue:
    full = f"{prefix}.{q.name}" if prefix else q.name
    settings = {k: _ENUMS[k](v) if k in _ENUMS else v for k, v in q.settings.items()}
    return Queue(name=full, children=tuple(_build(c, full) for c in q.children), **settings)


def tree(*children: _Q, **root_settings) -> Queue:
    return _build(_Q("root", children, root_settings), "")


def one_queue(**settings) -> Queue:
    """root with a single leaf ``root.q``."""
    return tree(leaf("q", **settings))


def executors(app_id: str, n: int, *, idle: int = 0, start: float = 0.0) -> tuple[Executor, ...]:
    """``n`` executors ``<app>-1..n`` started one second apart from ``start``; the first
    ``idle`` of them idle."""
    return tuple(
        Executor(f"{app_id}-{i}", started_at=start + i, idle=i <= idle) for i in range(1, n + 1)
    )


@dataclass
class Run:
    """A Scheduler and the decisions it gave, stepped by tests one event batch at a time."""

    root: Queue
    cores: int = 8
    mem_mib: int = 1 << 20
    slots: int = 4
    now: float = 0.0
    sched: Scheduler = field(init=False)
    log: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sched = Scheduler(self.root, Resources(self.cores, self.mem_mib), self.slots)

    def step(self, *events, at: float | None = None) -> list:
        if at is not None:
            self.now = at
        out = self.sched.step(self.now, events)
        self.log.append(out)
        return out

    def submit(self, *apps: app, at: float | None = None) -> list:
        return self.step(*(Submitted(a.spec()) for a in apps), at=at)

    def hold(self, app_id: str, n: int, *, idle: int = 0, at: float | None = None) -> list:
        """The app now holds ``n`` executors (``executors()``)."""
        return self.step(ExecutorsChanged(app_id, executors(app_id, n, idle=idle)), at=at)

    def state(self, app_id: str) -> str:
        return self.sched.apps[app_id].state.value

    def targets(self) -> dict[str, tuple[int, int]]:
        """(target, grant) of every admitted app."""
        return {
            a: (r.target, r.grant) for a, r in self.sched.apps.items() if r.state.admitted
        }


def launched(decisions: list) -> list[str]:
    return [d.app_id for d in decisions if isinstance(d, LaunchDriver)]


def stopped(decisions: list) -> list[str]:
    return [d.app_id for d in decisions if isinstance(d, StopDriver)]


def marks(decisions: list) -> list[tuple[str, str]]:
    return [(d.app_id, d.state.value) for d in decisions if isinstance(d, MarkState)]


def set_targets(decisions: list) -> dict[str, tuple[int, int]]:
    return {d.app_id: (d.target, d.grant) for d in decisions if isinstance(d, SetTarget)}


def reclaims(decisions: list) -> list[Reclaim]:
    return [d for d in decisions if isinstance(d, Reclaim)]


def next_claim(rnd, claims: dict, arbiter, leaves: list[str],
               seq: int) -> tuple[tuple[str, int, str] | None, int]:
    """One random step of a claims history: a claim dropped (from ``claims`` and the
    ``arbiter``: None), or the claim to set next -- an existing one to change (its id, seq and
    queue kept) or a new one in one of ``leaves`` -- as (app id, seq, queue); with the next
    free seq."""
    op = rnd.random()
    if op < 0.2 and claims:
        app_id = rnd.choice(sorted(claims))
        del claims[app_id]
        arbiter.drop(app_id)
        return None, seq
    if op < 0.6 and claims:
        old = claims[rnd.choice(sorted(claims))]
        return (old.app_id, old.seq, old.queue), seq
    seq += 1
    return (f"app{seq:03d}", seq, rnd.choice(leaves)), seq


WORKER = Resources(4, 8 * 1024)  # ``worker_report``'s workers: 4 cores/8g each


def worker_report(*free_cores: int) -> CapacityChanged:
    """Workers of 4 cores/8g with ``free_cores`` free each (the rest held by apps not ours)."""
    ws = tuple(Worker(f"w{i}", WORKER, Resources(c, 8 * 1024))
               for i, c in enumerate(free_cores))
    others = Resources(sum(4 - c for c in free_cores), 0)
    return CapacityChanged.of_workers(ws, 4, others)
