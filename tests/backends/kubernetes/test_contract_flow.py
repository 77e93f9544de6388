"""The backend contract's flows (``tests/backends``' suite, where the lead adds the Kubernetes
rig) on the fake API server with the scripted kubelet playing the driver pods: start, one
executor, exit codes 0 / 3, a restart that adopts a running and an ended driver, 143 when
stopped, and the refusals in one line."""

from __future__ import annotations

import time

import pytest

from sessionsched.backends.base import BackendError, Launch
from sessionsched.engine.events import DriverExited, DriverStarted, ExecutorsChanged
from tests.backends.kubernetes.scripted_kubelet import EXIT_CODE, WORK, ScriptedKubelet
from tests.sparkcluster import wait_until


def app(app_py, app_id, work_s, code=0) -> Launch:
    return Launch(app_id, app_id, argv=(app_py,),
                  conf={WORK: f"{work_s:g}", EXIT_CODE: str(code)}, in_cluster=True)


class Watch:
    def __init__(self, backend):
        self.backend, self.events = backend, []

    def until(self, cond, what, timeout_s=60):
        def step():
            self.events += self.backend.poll(time.time())
            return cond()
        wait_until(step, timeout_s, what, interval_s=0.2)

    def of(self, app_id, kind):
        return [e for e in self.events if isinstance(e, kind) and e.app_id == app_id]

    def code(self, app_id):
        ended = self.of(app_id, DriverExited)
        return ended[0].exit_code if ended else None


def test_contract_flow_through_a_restart(kubernetes_rig, tmp_path):
    app_py = str(tmp_path / "job.py")
    (tmp_path / "job.py").write_text("")
    rig, fake = kubernetes_rig, kubernetes_rig.fake
    with ScriptedKubelet(fake, rig.namespace, node="n1"):
        first = rig.backend
        handles = {a: first.launch(app(app_py, a, 2, c))
                   for a, c in (("driver-ok", 0), ("driver-fails", 3))}
        handles["driver-long"] = first.launch(app(app_py, "driver-long", 600))
        with pytest.raises(BackendError, match="has a driver already"):
            first.launch(app(app_py, "driver-ok", 2))
        before = Watch(first)
        before.until(lambda: before.code("driver-ok") is not None
                     and before.of("driver-long", ExecutorsChanged), "the first news")
        assert before.code("driver-ok") == 0
        for a in ("driver-ok", "driver-long"):
            kinds = [type(e) for e in before.events if getattr(e, "app_id", None) == a]
            assert kinds[:2] == [DriverStarted, ExecutorsChanged], (a, kinds)
        first.close()
        second = rig.new_backend()
        rig.backend = second
        for a in ("driver-fails", "driver-long"):
            assert second.adopt(handles[a])
        after = Watch(second)
        after.until(lambda: after.code("driver-fails") is not None, "the adopted news")
        assert after.code("driver-fails") == 3
        second.stop("driver-long")
        second.stop("driver-unknown")
        after.until(lambda: after.code("driver-long") is not None, "the stop")
        assert after.code("driver-long") == 143
        assert after.of("driver-ok", DriverExited) == []


def test_refusals_are_one_line(kubernetes_rig):
    no_main = {"action": "CreateSubmissionRequest", "appResource": "file:/no/app.jar",
               "sparkProperties": {}}
    for message, launch in {
            "Main class is missing": Launch("d1", "x", rest_request=no_main, in_cluster=True),
            "nothing to launch": Launch("d2", "x")}.items():
        with pytest.raises(BackendError, match=message) as e:
            kubernetes_rig.backend.launch(launch)
        assert "\n" not in str(e.value)
    assert kubernetes_rig.fake.pods("spark") == []


def test_contract_rig_capacity_follows_what_the_backend_does_not_manage(tmp_path):
    """The rig the lead adds to tests/backends (contract_rig.py), run through the contract's
    capacity flow with a minimal stand-in for the suite's Rig class."""
    from contextlib import ExitStack
    from dataclasses import dataclass

    from sessionsched.engine.events import CapacityChanged
    from tests.backends.kubernetes.contract_rig import kubernetes_contract_rig

    @dataclass
    class Rig:
        name: str
        new_backend: object
        clock: object
        patience_s: float
        app_file: object
        capacity: object
        external: object

    with ExitStack() as stack:
        rig = kubernetes_contract_rig(Rig, None, tmp_path / "job.py", tmp_path, stack)
        backend = rig.new_backend()
        stack.callback(backend.close)
        watch = Watch(backend)

        def capacity():
            caps = [e for e in watch.events if isinstance(e, CapacityChanged)]
            return caps[-1].capacity if caps else None

        watch.until(lambda: capacity() == rig.capacity, "the full capacity")
        (tmp_path / "job.py").write_text("")
        backend.launch(app(str(tmp_path / "job.py"), "driver-1", 600))  # on the driver pool
        with rig.external("notebook") as spark_app_id:
            watch.until(lambda: capacity().cores == rig.capacity.cores - 2, "2 cores less")
            backend.manage("driver-nb", spark_app_id)
            watch.until(lambda: capacity() == rig.capacity
                        and watch.of("driver-nb", ExecutorsChanged)
                        and len(watch.of("driver-nb", ExecutorsChanged)[-1].executors) == 2,
                        "capacity back, the managed app's executors")
        watch.until(lambda: watch.of("driver-nb", ExecutorsChanged)[-1].executors == (),
                    "the managed app's executors gone")
        watch.until(lambda: watch.of("driver-1", ExecutorsChanged), "driver-1 running")
        assert capacity() == rig.capacity  # its driver and executor: ours, or off the pool
        backend.stop("driver-1")
        watch.until(lambda: watch.code("driver-1") == 143, "driver-1 stopped")
