"""The backend fixture of the contract suite: one ``Rig`` per cluster backend (APScheduler's
datastore fixture idea). Adding a backend is one entry in ``RIGS`` and one rig factory.

A rig gives the suite, for its backend:

* ``new_backend()``: a backend instance over the rig's one cluster -- called again, it is the
  scheduler restarted (drivers outlive backend instances: a new one must ``adopt`` them);
* ``clock``: ``now()`` for ``poll(now)`` and ``sleep(s)`` between polls -- virtual time for the
  memory cluster (a wait costs nothing), wall time for a real cluster; waits are bounded in
  that clock's seconds (``patience_s``: long enough for a slow JVM start on a loaded machine);
* ``app(app_id, work_s, exit_code=0)``: a ``Launch`` of a small app that takes at least one
  executor, works about ``work_s`` seconds and exits with ``exit_code``: a PySpark app run
  by spark-submit (``tests/sparkcluster.APP_SOURCE``, whose arguments the real cluster runs),
  carrying the ``spark.sessionsched.memory.*`` properties the memory cluster runs instead;
* ``refused()``: launches the cluster refuses (the backend raises BackendError naming the
  problem): a REST CreateSubmissionRequest without a main class (a Spark master answers
  "Main class is missing."), and a launch with nothing to run;
* ``external(spark_app_id_hint)``: a context manager running an app that no backend launched
  (another team's, or a notebook's driver), holding ``EXTERNAL_CORES`` cores of 1-core
  executors; it yields the Spark app id once the cluster lists it, and ends it on exit;
* ``capacity``: the cores and memory the cluster offers when it runs nothing of anyone else's.

A backend passes the suite when it: reports DriverStarted (with a Spark app id), its
executors, and DriverExited with the driver's exit code (0, non-zero, 143 when stopped), each
once and in that order; adopts after a restart a running driver and an ended one (reporting
its exit code) and answers False for an unknown handle; reports capacity, at the first poll
and when usage it does not manage changes it, and stops taking an app's usage off once told
it is managed (``manage``), reporting that app's executors instead; and refuses what cannot
run with a one-line BackendError.

Kubernetes: ``tests/backends/kubernetes/contract_rig.py`` (the fake API server, the stand-in
spark-submit, a scripted kubelet playing the driver pods from the same properties the memory
cluster reads; ``external`` is another team's executor pods).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sessionsched.backends.base import ClusterBackend, Launch
from sessionsched.backends.memory import EXIT_CODE, WORK, MemoryBackend, MemoryCluster
from sessionsched.model import Resources
from tests.sparkcluster import DYNAMIC, SMALL, spark_submit_process, wait_idle, wait_until

EXTERNAL_CORES = 2
APP_CONF = {**SMALL, **DYNAMIC, "spark.dynamicAllocation.maxExecutors": "1"}


class VirtualClock:
    """Time that passes only when a test sleeps."""

    def __init__(self, start: float = 1_000_000.0):
        self.t = start

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


class WallClock:
    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass
class Rig:
    name: str
    new_backend: Callable[[], ClusterBackend]
    clock: VirtualClock | WallClock
    patience_s: float
    app_file: Path
    capacity: Resources
    external: Callable[[str], contextlib.AbstractContextManager[str]]
    poll_every_s: float = 0.2
    launched: list[str] = field(default_factory=list)  # app ids, stopped after the test

    def app(self, app_id: str, work_s: float, exit_code: int = 0) -> Launch:
        self.launched.append(app_id)
        args = ("--tasks", "1", "--task-s", "1", "--hold-s", f"{work_s:g}",
                "--exit-code", str(exit_code))
        conf = {**APP_CONF, WORK: f"{work_s:g}", EXIT_CODE: str(exit_code)}
        return Launch(app_id, app_id, argv=(str(self.app_file), *args), conf=conf)

    def refused(self) -> dict[str, Launch]:
        no_main_class = {"action": "CreateSubmissionRequest", "appResource": "file:/no/app.jar",
                         "clientSparkVersion": "4.0.1", "appArgs": [],
                         "environmentVariables": {}, "sparkProperties": dict(SMALL)}
        return {
            "Main class is missing": Launch("driver-no-main", "no-main", rest_request=no_main_class,
                                            in_cluster=True),
            "nothing to launch": Launch("driver-nothing", "nothing"),
        }


def _memory_rig(app_file: Path) -> Rig:
    cluster = MemoryCluster(Resources(4, 4096), driver_slots=4, driver_start_s=3.0,
                            executor_start_s=2.0)

    @contextlib.contextmanager
    def external(hint: str) -> Iterator[str]:
        spark_app_id = f"app-external-{hint}"
        cluster.start_external(spark_app_id, EXTERNAL_CORES, Resources(1, 512))
        try:
            yield spark_app_id
        finally:
            cluster.end_external(spark_app_id)

    return Rig("memory", lambda: MemoryBackend(cluster), VirtualClock(), patience_s=120,
               app_file=app_file, capacity=Resources(4, 4096), external=external,
               poll_every_s=0.5)


def _standalone_rig(request, app_file: Path, run_dir: Path) -> Rig:
    from sessionsched.backends.master import MasterClient
    from sessionsched.backends.standalone import StandaloneBackend

    cluster = request.getfixturevalue("spark_cluster")
    wait_idle(cluster)

    @contextlib.contextmanager
    def external(hint: str) -> Iterator[str]:
        args = ["--master", cluster.master_url, "--name", f"external-{hint}",
                "--conf", f"spark.cores.max={EXTERNAL_CORES}",
                *[a for k, v in SMALL.items() for a in ("--conf", f"{k}={v}")],
                str(app_file), "--tasks", "1", "--task-s", "1", "--hold-s", "600"]
        client = MasterClient(cluster.master_ui)
        try:
            with spark_submit_process(args, run_dir / f"external-{hint}.log"):
                def listed() -> str | None:
                    apps = [a for a in client.read().master.active_apps
                            if a.name == f"external-{hint}" and a.cores >= EXTERNAL_CORES]
                    return apps[0].id if apps else None

                yield wait_until(listed, 180, "the external app to hold its cores")
        finally:
            client.close()

    return Rig(
        "standalone",
        lambda: StandaloneBackend(cluster.master_url, cluster.master_ui, run_dir, 4,
                                  rest_url=cluster.rest_url),
        WallClock(), patience_s=240, app_file=app_file, capacity=Resources(4, 4096),
        external=external,
    )


RIGS = {
    "memory": pytest.param("memory", id="memory"),
    "standalone": pytest.param("standalone", id="standalone", marks=pytest.mark.cluster),
    # tests/backends/kubernetes/contract_rig.py
    "kubernetes": pytest.param("kubernetes", id="kubernetes"),
}


@pytest.fixture(params=list(RIGS.values()))
def rig(request, pyspark_app, tmp_path) -> Iterator[Rig]:
    stack = contextlib.ExitStack()  # what a rig runs beside its backends, ended after them
    if request.param == "memory":
        made = _memory_rig(pyspark_app)
    elif request.param == "kubernetes":
        from tests.backends.kubernetes.contract_rig import kubernetes_contract_rig

        made = kubernetes_contract_rig(Rig, WallClock(), pyspark_app, tmp_path, stack,
                                       EXTERNAL_CORES)
    else:
        made = _standalone_rig(request, pyspark_app, tmp_path / "run")
    backends: list[ClusterBackend] = []
    make = made.new_backend

    def tracked() -> ClusterBackend:
        backend = make()
        backends.append(backend)
        return backend

    made.new_backend = tracked
    try:
        yield made
    finally:
        # Whatever a test left running is stopped, by every instance it made, then closed.
        for backend in backends:
            for app_id in made.launched:
                with contextlib.suppress(Exception):
                    backend.stop(app_id)
            with contextlib.suppress(Exception):
                backend.close()
        stack.close()
        if made.name == "standalone":
            wait_idle(request.getfixturevalue("spark_cluster"), timeout_s=120)

