"""The standalone cluster as its master and workers describe it, as typed data (no IO).

Sources, both the JSON of the web UIs (Spark 4.0.1 field names):

* the master's ``/json/``: workers (state, cores, memory; custom resources such as GPUs in
  ``resources`` and ``resourcesfree``, each ``name -> {"name", "addresses"}``, the amount the
  number of addresses), applications (``cores`` = cores granted now), drivers of cluster
  deploy mode (state, cores, memory, worker);
* each worker's ``/json/``: ``executors[]`` running on it, each with its ``id`` (unique within
  its application), ``appid`` and ``memory``. It carries no start time, so whoever reads it
  stamps an executor with the time it was first seen.

``parse_*`` raise ValueError on JSON that is not what a Spark master or worker sends.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..model import Resources, Worker
from ..model.custom import Custom, combine, custom_of

# How a cluster-mode driver's final state (``DriverState``) becomes an exit code. The master
# does not report the driver's real exit code, only whether it succeeded; KILLED is reported
# as a SIGTERM death (128 + 15), as a client-mode driver stopped the same way would be.
DRIVER_EXIT_CODES: Mapping[str, int] = {"FINISHED": 0, "FAILED": 1, "ERROR": 1, "KILLED": 143}


@dataclass(frozen=True)
class WorkerInfo:
    id: str
    host_port: str
    webui: str
    state: str
    cores: int
    cores_used: int
    memory_mib: int
    memory_used_mib: int
    resources: Custom = ()  # custom resources (GPUs): name -> how many addresses
    resources_free: Custom = ()  # of those, not given to a driver or an executor

    @property
    def alive(self) -> bool:
        return self.state == "ALIVE"


@dataclass(frozen=True)
class AppInfo:
    id: str
    name: str
    user: str
    state: str
    cores: int  # granted now
    memory_per_executor_mib: int
    start_ms: int
    # custom resources each executor of its default profile asks (``resourcesperexecutor``)
    resources_per_executor: Custom = ()


@dataclass(frozen=True)
class DriverInfo:
    id: str
    state: str
    cores: int
    memory_mib: int
    worker_id: str | None
    start_ms: int = 0
    main_class: str = ""  # the driver's main class (``mainclass``)
    resources: Custom = ()  # custom resources given to it (``resources``)

    @property
    def exit_code(self) -> int | None:
        """The exit code if the driver has ended, else None."""
        return DRIVER_EXIT_CODES.get(self.state)


@dataclass(frozen=True)
class ExecutorInfo:
    spark_app_id: str
    executor_id: str
    memory_mib: int
    worker_id: str


@dataclass(frozen=True)
class MasterView:
    url: str
    status: str
    workers: tuple[WorkerInfo, ...]
    active_apps: tuple[AppInfo, ...]
    completed_apps: tuple[AppInfo, ...]
    drivers: tuple[DriverInfo, ...]  # active first, then completed

    def alive_workers(self) -> list[WorkerInfo]:
        return [w for w in self.workers if w.alive]

    def driver(self, driver_id: str) -> DriverInfo | None:
        return next((d for d in self.drivers if d.id == driver_id), None)

    def worker(self, worker_id: str | None) -> WorkerInfo | None:
        return next((w for w in self.workers if w.id == worker_id), None)


@dataclass(frozen=True)
class ClusterView:
    """The master's view plus the executors of the workers that answered."""

    master: MasterView
    executors: tuple[ExecutorInfo, ...]

    def executors_of(self, spark_app_id: str) -> list[ExecutorInfo]:
        return [e for e in self.executors if e.spark_app_id == spark_app_id]


def _req(obj: Mapping, key: str, kind: type, where: str):
    if not isinstance(obj, Mapping) or key not in obj:
        raise ValueError(f"{where}: field {key!r} missing")
    value = obj[key]
    if kind is int:
        try:
            return int(value)  # the master sends some numbers as strings (driver starttime)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: field {key!r} is not a number: {value!r}") from None
    if not isinstance(value, kind):
        raise ValueError(f"{where}: field {key!r} has the wrong type")
    return value


def _list(obj: Mapping, key: str, where: str) -> list:
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise ValueError(f"{where}: {key!r} is not a list")
    return value


def _app(a: Mapping) -> AppInfo:
    where = "master JSON application"
    return AppInfo(
        id=_req(a, "id", str, where),
        name=str(a.get("name", "")),
        user=str(a.get("user", "")),
        state=str(a.get("state", "")),
        cores=_req(a, "cores", int, where),
        memory_per_executor_mib=_req(a, "memoryperexecutor", int, where),
        start_ms=_req(a, "starttime", int, where),
        resources_per_executor=_requirements(a.get("resourcesperexecutor"), where),
    )


def _requirements(value: object, where: str) -> Custom:
    """An application's ``resourcesperexecutor``: [{"name", "amount"}] (absent before Spark 3)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ValueError(f"{where}: 'resourcesperexecutor' is not a list")
    amounts: dict[str, int] = {}
    for req in value:
        name = req.get("name") if isinstance(req, Mapping) else None
        n = req.get("amount") if isinstance(req, Mapping) else None
        if not isinstance(name, str) or not isinstance(n, int) or isinstance(n, bool):
            raise ValueError(f"{where}: 'resourcesperexecutor' holds {req!r}, not a name and a"
                             " whole amount")
        amounts[name] = amounts.get(name, 0) + n
    return custom_of(amounts)


def _driver(d: Mapping) -> DriverInfo:
    where = "master JSON driver"
    worker = d.get("worker")
    return DriverInfo(
        id=_req(d, "id", str, where),
        state=_req(d, "state", str, where),
        cores=_req(d, "cores", int, where),
        memory_mib=_req(d, "memory", int, where),
        worker_id=worker if isinstance(worker, str) and worker != "None" else None,
        start_ms=_req(d, "starttime", int, where),
        main_class=str(d.get("mainclass") or ""),
        resources=_resources(d, "resources", "driver"),
    )


def _resources(w: Mapping, key: str, of: str = "worker") -> Custom:
    """A worker's ``resources``/``resourcesfree`` or a driver's ``resources``: name ->
    {"name", "addresses"}, counted (absent where there are none, or from a master before
    Spark 3)."""
    where = f"master JSON {of} {key!r}"
    value = w.get(key) or {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: not a JSON object")
    amounts = {}
    for name, info in value.items():
        addresses = info.get("addresses") if isinstance(info, Mapping) else None
        if not isinstance(addresses, list):
            raise ValueError(f"{where}: {name!r} has no list of addresses")
        amounts[str(name)] = len(addresses)
    return custom_of(amounts)


def parse_master(data: object) -> MasterView:
    """A master's ``/json/`` document."""
    where = "master JSON"
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: not a JSON object")
    workers = tuple(
        WorkerInfo(
            id=_req(w, "id", str, "master JSON worker"),
            host_port=f"{w.get('host', '?')}:{w.get('port', '?')}",
            webui=_req(w, "webuiaddress", str, "master JSON worker"),
            state=_req(w, "state", str, "master JSON worker"),
            cores=_req(w, "cores", int, "master JSON worker"),
            cores_used=_req(w, "coresused", int, "master JSON worker"),
            memory_mib=_req(w, "memory", int, "master JSON worker"),
            memory_used_mib=_req(w, "memoryused", int, "master JSON worker"),
            resources=_resources(w, "resources"),
            resources_free=_resources(w, "resourcesfree"),
        )
        for w in _list(data, "workers", where)
    )
    drivers = _list(data, "activedrivers", where) + _list(data, "completeddrivers", where)
    return MasterView(
        url=_req(data, "url", str, where),
        status=str(data.get("status", "")),
        workers=workers,
        active_apps=tuple(_app(a) for a in _list(data, "activeapps", where)),
        completed_apps=tuple(_app(a) for a in _list(data, "completedapps", where)),
        drivers=tuple(_driver(d) for d in drivers),
    )


def parse_worker_executors(data: object, worker_id: str) -> tuple[ExecutorInfo, ...]:
    """The running executors in a worker's ``/json/`` document."""
    where = f"worker {worker_id} JSON"
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: not a JSON object")
    return tuple(
        ExecutorInfo(
            spark_app_id=_req(e, "appid", str, where),
            executor_id=str(_req(e, "id", int, where)),
            memory_mib=_req(e, "memory", int, where),
            worker_id=worker_id,
        )
        for e in _list(data, "executors", where)
    )


def workers_of(view: ClusterView) -> tuple[Worker, ...]:
    """The alive workers one by one: each one's cores, memory and custom resources, and what
    is free on it (``coresused``/``memoryused`` taken off, ``resourcesfree``) as the master's
    ``/json/`` says now."""
    return tuple(Worker(w.id, Resources(w.cores, w.memory_mib, w.resources),
                        Resources(max(w.cores - w.cores_used, 0),
                                  max(w.memory_mib - w.memory_used_mib, 0), w.resources_free))
                 for w in view.master.alive_workers())


def capacity_for_managed(
    view: ClusterView, managed_apps: Iterable[str], managed_drivers: Iterable[str]
) -> Resources:
    """Alive workers' cores and memory minus what the cluster gives to applications and
    cluster-mode drivers that are not managed (not in ``managed_apps`` / ``managed_drivers``).

    An unmanaged application holds the cores the master granted it, and the memory and
    custom resources (GPUs) of its executors (counted from the workers' lists, each executor
    of what the application asks per executor); an unmanaged driver holds its cores, memory
    and custom resources while it runs. Never below zero.
    """
    apps, drivers = set(managed_apps), set(managed_drivers)
    alive = view.master.alive_workers()
    total = Resources(sum(w.cores for w in alive), sum(w.memory_mib for w in alive))
    foreign = {a.id for a in view.master.active_apps} - apps
    foreign_cores = sum(a.cores for a in view.master.active_apps if a.id in foreign)
    foreign_mem = sum(e.memory_mib for e in view.executors if e.spark_app_id in foreign)
    custom = ()
    for w in alive:
        custom = combine(custom, w.resources, 1)
    per_executor = {a.id: a.resources_per_executor for a in view.master.active_apps
                    if a.id in foreign and a.resources_per_executor}
    for e in view.executors if per_executor else ():
        custom = combine(custom, per_executor.get(e.spark_app_id, ()), -1)
    for d in view.master.drivers:
        if d.state == "RUNNING" and d.id not in drivers:
            foreign_cores += d.cores
            foreign_mem += d.memory_mib
            custom = combine(custom, d.resources, -1)
    return Resources(max(total.cores - foreign_cores, 0), max(total.mem_mib - foreign_mem, 0),
                     tuple((k, v) for k, v in custom if v > 0))


def presumed_ours(
    view: ClusterView,
    ours: Iterable[str],
    ours_drivers: Iterable[str],
    apps_launched_at: Sequence[float],
    drivers_launched_at: Sequence[float] = (),
) -> tuple[set[str], set[str]]:
    """(applications, cluster drivers) presumed ours although not yet known to be.

    ``apps_launched_at``: launch times (epoch seconds) of our live drivers whose Spark app id
    is not known yet; ``drivers_launched_at``: of our cluster-mode submissions whose driver id
    is not known yet. A driver registers (the master lists it, and may grant it cores at once)
    a moment before its log says so, and a submission's driver runs a moment before
    spark-submit logs its id; in that moment its usage would look foreign and the capacity
    would dip for a cycle -- enough for the engine to reclaim executors for nothing. So an
    application (driver) known to be nobody's that started after such a launch (with 1 s of
    clock slack) is presumed ours: the earliest ones first, one per unidentified launch. Wrong
    only briefly and on the safe side: a foreign one that started in that moment is subtracted
    once the real ids are known.
    """
    apps = _earliest_after(view.master.active_apps, set(ours), apps_launched_at)
    running = [d for d in view.master.drivers if d.exit_code is None]
    drivers = _earliest_after(running, set(ours_drivers), drivers_launched_at)
    return apps, drivers


def _earliest_after(items: Sequence[AppInfo | DriverInfo], known: set[str],
                    launched_at: Sequence[float]) -> set[str]:
    if not launched_at:
        return set()
    since_ms = (min(launched_at) - 1.0) * 1000
    candidates = sorted((i for i in items if i.id not in known and i.start_ms >= since_ms),
                        key=lambda i: (i.start_ms, i.id))
    return {i.id for i in candidates[: len(launched_at)]}
