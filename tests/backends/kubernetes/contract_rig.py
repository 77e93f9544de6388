"""The Kubernetes entry for the backend contract suite (``tests/backends/conftest.py``'s
``Rig``): ``kubernetes_contract_rig(Rig, WallClock, app_file, tmp_path, stack)``.

One fake API server with two executor nodes (``pool=spark``, 2 cpu / 4Gi each: the capacity)
and a driver node (``pool=drivers``: drivers have a pool of their own, so a running driver
does not change the capacity, as on standalone where client-mode drivers run on the
scheduler's host); the stand-in spark-submit (fast launches); the scripted kubelet playing the
driver pods from the app's ``spark.sessionsched.memory.*`` properties; ``external`` runs
another team's executor pods (1 cpu each) on the executor nodes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

from sessionsched.backends.kubernetes import KubernetesBackend
from sessionsched.config import KubernetesSection
from sessionsched.model import Resources
from tests.backends.kubernetes.conftest import standin_submit
from tests.backends.kubernetes.fake_apiserver import FakeApiServer, free_port
from tests.backends.kubernetes.scripted_kubelet import ScriptedKubelet

NS = "spark"


def kubernetes_contract_rig(rig_class, clock, app_file: Path, tmp_path: Path, stack: ExitStack,
                            external_cores: int = 2):
    fake = stack.enter_context(FakeApiServer(free_port()))
    for node in ("n1", "n2"):
        fake.add_node(node, cpu="2", memory="4Gi", labels={"pool": "spark"})
    fake.add_node("d1", cpu="8", memory="16Gi", labels={"pool": "drivers"})
    stack.enter_context(ScriptedKubelet(fake, NS, node="d1", executor_node="n1"))
    settings = KubernetesSection(
        api_server=fake.url, namespace=NS, image="spark:4.0.1",
        node_selector={"pool": "spark"}, driver_node_selector={"pool": "drivers"},
        spark_submit=standin_submit(tmp_path), upload_path=f"file://{tmp_path}/upload",
        watch_timeout_s=30)

    @contextlib.contextmanager
    def external(hint: str) -> Iterator[str]:
        spark_app_id = f"spark-external-{hint}"
        names = [f"external-{hint}-exec-{i}" for i in range(1, external_cores + 1)]
        for i, name in enumerate(names, 1):
            fake.add_pod("other-team", name, cpu="1", memory="512Mi", node=f"n{1 + i % 2}",
                         labels={"spark-role": "executor", "spark-app-selector": spark_app_id,
                                 "spark-exec-id": str(i)})
        try:
            yield spark_app_id
        finally:
            for name in names:
                fake.state.delete("pods", "other-team", name)

    return rig_class(
        "kubernetes", lambda: KubernetesBackend(settings, tmp_path / "drivers", 4), clock,
        patience_s=60, app_file=app_file, capacity=Resources(4, 8192), external=external)
