"""The Kubernetes backend over the fake API server (``kubernetes_rig``: a ready backend, two
nodes; its spark-submit is the stand-in that makes Spark's requests -- the real one is in
``test_spark_submit.py``). The fake plays the kubelet: tests move pods' phases."""

from __future__ import annotations

import time

import pytest

from sessionsched.agent.launch import wrap_argv
from sessionsched.backends import driver_files, procs
from sessionsched.backends.base import BackendError, Handle, Launch
from sessionsched.backends.kubernetes import KubernetesBackend
from sessionsched.backends.procs import ProcessId
from sessionsched.config import KubernetesSection
from sessionsched.engine.events import (
    CapacityChanged,
    DriverExited,
    DriverStarted,
    ExecutorsChanged,
)
from sessionsched.model import Resources
from tests.sparkcluster import wait_until

NS = "spark"
APP_LABEL = "sessionsched.io/app-id"


@pytest.fixture
def app_py(tmp_path):
    path = tmp_path / "app.py"
    path.write_text("print('hello')\n")
    return str(path)


def launch_for(app_id, app_py, in_cluster=False, **kw) -> Launch:
    return Launch(app_id=app_id, name=app_id, argv=wrap_argv(["--name", app_id, app_py]),
                  conf={"spark.app.name": app_id}, env={"SESSIONSCHED_APP_ID": app_id},
                  in_cluster=in_cluster, queue="root.etl", priority=7000, **kw)


def collect(backend, until, timeout_s=20.0, what="the events"):
    """Poll until ``until(events so far)``; returns the events."""
    seen: list = []

    def step():
        seen.extend(backend.poll(time.time()))
        return until(seen)

    wait_until(step, timeout_s, what, interval_s=0.1)
    return seen


def driver_pod(fake, app_id):
    return wait_until(lambda: fake.pods(NS, f"{APP_LABEL}={app_id},spark-role=driver"), 20,
                      f"{app_id}'s driver pod")[0]


def of(events, kind, app_id=None):
    return [e for e in events if isinstance(e, kind) and (app_id is None or e.app_id == app_id)]


def executor_pod(fake, driver, exec_id, phase="Running", node="n1"):
    sel = driver["metadata"]["labels"]["spark-app-selector"]
    name = f"{driver['metadata']['name'][:-7]}-exec-{exec_id}"
    fake.add_pod(NS, name, cpu="1", memory="1Gi", node=node, phase=phase, labels={
        "spark-role": "executor", "spark-app-selector": sel, "spark-exec-id": str(exec_id)})
    return name


def test_launch_labels_the_driver_and_phases_decide_the_ending(kubernetes_rig, app_py):
    rig, fake = kubernetes_rig, kubernetes_rig.fake
    handle = rig.backend.launch(launch_for("driver-1", app_py))
    assert handle.kind == "cluster-driver" and handle.app_id == "driver-1"
    pod = driver_pod(fake, "driver-1")
    labels = pod["metadata"]["labels"]
    assert labels["sessionsched.io/queue"] == "root.etl"
    assert labels["sessionsched.io/priority"] == "7000"
    assert pod["metadata"]["annotations"]["sessionsched.io/priority"] == "7000"
    name, sel = pod["metadata"]["name"], labels["spark-app-selector"]
    # Pending: nothing to say about the app yet
    assert not [e for e in rig.backend.poll(time.time()) if not isinstance(e, CapacityChanged)]
    fake.set_pod_phase(NS, name, "Running", node="n1")
    events = collect(rig.backend, lambda ev: of(ev, DriverStarted))
    assert of(events, DriverStarted) == [DriverStarted("driver-1", sel)]
    # The Pending one first: once the watch has delivered the later two, it has seen it too.
    executor_pod(fake, pod, 3, phase="Pending")  # not an executor yet
    executor_pod(fake, pod, 1)
    executor_pod(fake, pod, 2)
    events = collect(rig.backend, lambda ev: (changed := of(ev, ExecutorsChanged))
                     and len(changed[-1].executors) >= 2, what="two executors reported")
    assert [e.executor_id for e in of(events, ExecutorsChanged)[-1].executors] == ["1", "2"]
    fake.set_pod_phase(NS, name, "Succeeded", exit_code=0)
    events = collect(rig.backend, lambda ev: of(ev, DriverExited))
    assert of(events, DriverExited) == [DriverExited("driver-1", 0)]
    assert of(rig.backend.poll(time.time()), DriverExited) == []  # reported once


@pytest.mark.parametrize(("code", "expected"), [(3, 3), (0, 1)])
def test_failed_driver_pod_ends_failed_with_its_exit_code(kubernetes_rig, app_py, code,
                                                          expected):
    rig = kubernetes_rig
    rig.backend.launch(launch_for("driver-f", app_py))
    pod = driver_pod(rig.fake, "driver-f")
    rig.fake.set_pod_phase(NS, pod["metadata"]["name"], "Failed", exit_code=code)
    events = collect(rig.backend, lambda ev: of(ev, DriverExited))
    assert of(events, DriverExited) == [DriverExited("driver-f", expected)]


def test_stop_deletes_the_driver_pod_and_what_it_owns(kubernetes_rig, app_py):
    rig, fake = kubernetes_rig, kubernetes_rig.fake
    rig.backend.launch(launch_for("driver-s", app_py))
    pod = driver_pod(fake, "driver-s")
    fake.set_pod_phase(NS, pod["metadata"]["name"], "Running")
    wait_until(lambda: fake.state.select("configmaps", NS, lambda _: True, lambda _: True), 10,
               "the driver's config map")
    collect(rig.backend, lambda ev: of(ev, DriverStarted))
    rig.backend.stop("driver-s")
    events = collect(rig.backend, lambda ev: of(ev, DriverExited))
    assert of(events, DriverExited) == [DriverExited("driver-s", 143)]
    assert fake.pods(NS) == []
    assert fake.state.select("configmaps", NS, lambda _: True, lambda _: True) == []
    assert fake.state.select("services", NS, lambda _: True, lambda _: True) == []
    deletes = [r for r in fake.requests if r.method == "DELETE" and "/pods/" in r.path]
    assert deletes[0].body["propagationPolicy"] == "Background"
    rig.backend.stop("driver-s")  # ended: no error, no request
    rig.backend.stop("never-launched")


def test_stop_while_submitting_kills_spark_submit(kubernetes_rig, app_py, monkeypatch):
    monkeypatch.setenv("STANDIN_DELAY_S", "30")
    rig = kubernetes_rig
    rig.backend.launch(launch_for("driver-k", app_py))
    rig.backend.stop("driver-k")
    events = collect(rig.backend, lambda ev: of(ev, DriverExited), timeout_s=30)
    assert of(events, DriverExited) == [DriverExited("driver-k", 143)]
    assert rig.fake.pods(NS) == []


def test_adopt_after_restart_finds_the_pod_and_never_submits_twice(kubernetes_rig, app_py):
    rig, fake = kubernetes_rig, kubernetes_rig.fake
    handle = rig.backend.launch(launch_for("driver-a", app_py))
    pod = driver_pod(fake, "driver-a")
    rig.backend.close()
    fake.set_pod_phase(NS, pod["metadata"]["name"], "Running")
    again = rig.new_backend()
    rig.backend = again  # closed by the fixture
    assert again.adopt(handle)
    assert again.adopt(Handle("driver-unknown", "cluster-driver", NS, 0.0)) is False
    events = collect(again, lambda ev: of(ev, DriverStarted))
    assert of(events, DriverStarted)[0].spark_app_id == pod["metadata"]["labels"][
        "spark-app-selector"]
    # The service asks again (a launch repeated after a crash): the pod is tracked instead
    again2 = rig.new_backend()
    try:
        again2.launch(launch_for("driver-a", app_py))
        assert len(fake.pods(NS, f"{APP_LABEL}=driver-a")) == 1
    finally:
        again2.close()
    fake.set_pod_phase(NS, pod["metadata"]["name"], "Failed", exit_code=2)
    events = collect(again, lambda ev: of(ev, DriverExited))
    assert of(events, DriverExited) == [DriverExited("driver-a", 2)]


def test_capacity_is_allocatable_minus_what_others_use(fake, tmp_path, app_py):
    from tests.backends.kubernetes.conftest import standin_submit

    fake.add_node("n1", cpu="4", memory="8Gi", labels={"pool": "spark"})
    fake.add_node("n2", cpu="4000m", memory="8192Mi", labels={"pool": "spark"})
    fake.add_node("other", cpu="16", memory="64Gi", labels={"pool": "db"})
    fake.add_node("down", cpu="4", memory="8Gi", labels={"pool": "spark"}, ready=False)
    fake.add_pod("db", "postgres", cpu="1500m", memory="2Gi", node="n1")
    fake.add_pod("db", "big", cpu="8", memory="32Gi", node="other")
    fake.add_pod("db", "done", cpu="2", memory="1Gi", node="n2", phase="Succeeded")
    settings = KubernetesSection(api_server=fake.url, namespace=NS, image="spark:4.0.1",
                                 node_selector={"pool": "spark"},
                                 spark_submit=standin_submit(tmp_path),
                                 upload_path=f"file://{tmp_path}/up")
    backend = KubernetesBackend(settings, tmp_path / "drivers", driver_slots=3)
    try:
        assert backend.capacity() == (Resources(6, 14336), 3)  # 8 - 1.5 cpu, 16 - 2 GiB
        # node by node: n1 4 - 1.5 cpu (whole cores: 2), 8 - 2 GiB; n2 whole
        assert [(w.name, w.size) for w in backend.workers()] == [
            ("n1", Resources(2, 6144)), ("n2", Resources(4, 8192))]
        # Someone else's Spark app: its executors count against us
        fake.add_pod("other-team", "x-exec-1", cpu="1", memory="1Gi", node="n2",
                     labels={"spark-role": "executor", "spark-app-selector": "spark-theirs"})
        events = collect(backend, lambda ev: of(ev, CapacityChanged))
        last = of(events, CapacityChanged)[-1]
        assert (last.capacity, last.driver_slots) == (Resources(5, 13312), 3)
        assert [(w.name, w.size) for w in last.workers] == [
            ("n1", Resources(2, 6144)), ("n2", Resources(3, 7168))]  # n2 less their executor
        # Ours: a Python app (a driver slot for the engine) -- its driver pod is taken off, its
        # executors are not
        backend.launch(launch_for("driver-c", app_py, in_cluster=False))
        pod = driver_pod(fake, "driver-c")
        fake.set_pod_phase(NS, pod["metadata"]["name"], "Running", node="n1")
        executor_pod(fake, pod, 1, node="n2")
        events = collect(backend, lambda ev: of(ev, ExecutorsChanged))
        assert [(e.executor_id, e.worker) for e in of(events, ExecutorsChanged)[-1].executors
                ] == [("1", "n2")]  # on its pod's node
        cores, mem = backend.capacity()[0].cores, backend.capacity()[0].mem_mib
        assert (cores, mem) == (4, 13312 - 1408)
        n2 = backend.workers()[1]  # our executor is not taken off its size, only its free room
        assert n2.size == Resources(3, 7168) and n2.free.cores < n2.size.cores
    finally:
        backend.close()


def test_in_cluster_driver_pods_are_not_taken_off(kubernetes_rig, app_py):
    rig = kubernetes_rig
    rig.backend.launch(launch_for("driver-j", app_py, in_cluster=True))
    pod = driver_pod(rig.fake, "driver-j")
    rig.fake.set_pod_phase(NS, pod["metadata"]["name"], "Running", node="n1")
    collect(rig.backend, lambda ev: of(ev, DriverStarted))
    assert rig.backend.capacity()[0] == Resources(8, 16384)


def test_submit_failure_without_a_pod_is_a_failed_driver(kubernetes_rig, app_py, monkeypatch):
    monkeypatch.setenv("STANDIN_EXIT", "7")
    kubernetes_rig.backend.launch(launch_for("driver-x", app_py))
    events = collect(kubernetes_rig.backend, lambda ev: of(ev, DriverExited))
    assert of(events, DriverExited) == [DriverExited("driver-x", 7)]


def test_a_submit_that_says_0_without_a_pod_fails_after_the_pod_wait_on_polls_clock(
        kubernetes_rig, app_py, monkeypatch):
    """spark-submit ended 0 and no pod reached the cache: the pod may still be on its way for
    POD_WAIT_S (10 s) of the clock ``poll`` is given, then the driver failed (1). The clock here
    is far in the past: the wall clock plays no part."""
    monkeypatch.setenv("STANDIN_EXIT", "0")
    kubernetes_rig.backend.launch(launch_for("driver-z", app_py))
    submitter = ProcessId.parse(driver_files.load(kubernetes_rig.run_dir, "driver-z").process)
    wait_until(lambda: not procs.is_running(submitter), 20, "spark-submit's end")
    t, backend = 1_000_000.0, kubernetes_rig.backend
    assert of(backend.poll(t), DriverExited) == []  # its end is seen now
    assert of(backend.poll(t + 9.9), DriverExited) == []
    assert of(backend.poll(t + 10.1), DriverExited) == [DriverExited("driver-z", 1)]


def test_failed_apply_deletes_the_pod_and_fails(kubernetes_rig, app_py):
    rig = kubernetes_rig
    rig.fake.fail(500, r"/services/", "PATCH")
    rig.backend.launch(launch_for("driver-p", app_py))
    events = collect(rig.backend, lambda ev: of(ev, DriverExited))
    assert of(events, DriverExited)[0].exit_code == 1
    assert rig.fake.pods(NS) == []


def test_watch_expiry_relists_and_the_cache_stays_true(kubernetes_rig, app_py):
    rig, fake = kubernetes_rig, kubernetes_rig.fake
    rig.backend.capacity()  # synced
    assert rig.backend.pods.lists == 1
    fake.end_watches(compact=True)  # every watch ends; resuming gets 410 Gone
    fake.add_pod("db", "late", cpu="2", memory="2Gi", node="n2")
    events = collect(rig.backend, lambda ev: of(ev, CapacityChanged)
                     and of(ev, CapacityChanged)[-1].capacity.cores == 6)
    assert rig.backend.pods.lists == 2
    assert of(events, CapacityChanged)[-1].capacity == Resources(6, 14336)


def test_unreachable_api_server_is_one_line_backend_error(kubernetes_rig, tmp_path):
    rig = kubernetes_rig
    settings = rig.settings.model_copy(update={"max_failures": 2})
    backend = KubernetesBackend(settings, tmp_path / "other")
    try:
        assert backend.capacity()[0] == Resources(8, 16384)
        rig.fake.fail(500, r"^/api/v1/(pods|nodes)$", "GET", times=1000)
        rig.fake.end_watches(compact=True)
        wait_until(lambda: not backend.pods.healthy, 30, "the informer to give up")
        with pytest.raises(BackendError) as e:
            backend.capacity()
        assert "unreachable" in str(e.value) and "\n" not in str(e.value)
        with pytest.raises(BackendError):
            backend.poll(time.time())
        rig.fake.state.faults.clear()
        def capacity_again():
            try:
                return backend.capacity()
            except BackendError:
                return None

        assert wait_until(capacity_again, 30, "the backend to recover")[0] == Resources(8, 16384)
    finally:
        backend.close()


def test_local_python_app_needs_an_upload_path(fake, tmp_path, app_py):
    settings = KubernetesSection(api_server=fake.url, namespace=NS, image="spark:4.0.1")
    backend = KubernetesBackend(settings, tmp_path / "drivers")
    try:
        with pytest.raises(BackendError, match="upload_path"):
            backend.launch(launch_for("driver-u", app_py))
        assert fake.pods(NS) == []
    finally:
        backend.close()


def test_missing_pod_template_is_refused(fake, tmp_path):
    settings = KubernetesSection(api_server=fake.url, image="i",
                                 driver_pod_template=str(tmp_path / "nope.yaml"))
    with pytest.raises(BackendError, match="nope.yaml does not exist"):
        KubernetesBackend(settings, tmp_path / "drivers")


def test_managed_notebook_app_reports_its_executors(kubernetes_rig):
    rig = kubernetes_rig
    rig.fake.add_pod(NS, "nb-exec-1", node="n1", labels={
        "spark-role": "executor", "spark-app-selector": "spark-nb", "spark-exec-id": "1"})
    # Someone else's executor until it is managed: wait until the informer has seen it.
    before = wait_until(lambda: (c := rig.backend.capacity()[0]) == Resources(7, 15360) and c,
                        20, "the executor pod taken off the capacity")
    rig.backend.manage("session-1", "spark-nb")
    events = collect(rig.backend, lambda ev: of(ev, ExecutorsChanged, "session-1"))
    assert [e.executor_id for e in of(events, ExecutorsChanged)[0].executors] == ["1"]
    assert rig.backend.capacity()[0] == before + Resources(1, 1024)


def test_kubeconfig_is_read_and_a_missing_one_refused(fake, tmp_path):
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: fake, cluster: {{server: "{fake.url}"}}}}]
users: [{{name: me, user: {{}}}}]
contexts: [{{name: ctx, context: {{cluster: fake, user: me}}}}]
current-context: ctx
""")
    fake.add_node("n1", cpu="2", memory="4Gi")
    settings = KubernetesSection(kubeconfig=str(kubeconfig), context="ctx", image="i")
    backend = KubernetesBackend(settings, tmp_path / "drivers")
    try:
        assert backend.capacity()[0] == Resources(2, 4096)
        assert backend.master == f"k8s://{fake.url}"
    finally:
        backend.close()
    missing = KubernetesSection(kubeconfig=str(tmp_path / "nope"), image="i")
    with pytest.raises(BackendError, match="nope does not exist"):
        KubernetesBackend(missing, tmp_path / "drivers")
