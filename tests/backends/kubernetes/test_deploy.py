"""deploy/kubernetes: every manifest loads into the ``kubernetes`` client's models without
losing a field, the pieces refer to each other, the ConfigMap holds a valid server config,
and the scheduler's RBAC grants exactly the verbs the backend (and the spark-submit it runs)
was seen using against the fake API server."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from sessionsched.agent.launch import wrap_argv
from sessionsched.backends.base import Launch
from sessionsched.config import ServerConfig, parse_model
from sessionsched.engine.events import DriverStarted
from tests.sparkcluster import wait_until

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "kubernetes"
MODELS = {"ServiceAccount": "V1ServiceAccount", "ClusterRole": "V1ClusterRole",
          "ClusterRoleBinding": "V1ClusterRoleBinding", "Role": "V1Role",
          "RoleBinding": "V1RoleBinding", "ConfigMap": "V1ConfigMap",
          "Deployment": "V1Deployment", "PersistentVolumeClaim": "V1PersistentVolumeClaim",
          "Service": "V1Service"}


def manifests() -> list[dict]:
    docs = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def by_kind(kind: str) -> list[dict]:
    return [d for d in manifests() if d["kind"] == kind]


def test_manifests_load_into_client_models_without_losing_fields():
    api = client.ApiClient()
    kinds = set()
    for doc in manifests():
        model = api.deserialize(json.dumps(doc), MODELS[doc["kind"]], "application/json")
        assert api.sanitize_for_serialization(model) == json.loads(json.dumps(doc)), \
            f"{doc['kind']} {doc['metadata']['name']}: a field the model does not know"
        kinds.add(doc["kind"])
    assert {"Deployment", "Service", "ServiceAccount", "Role", "RoleBinding",
            "ConfigMap"} <= kinds


def test_pieces_refer_to_each_other_and_the_config_is_valid():
    (deployment,) = by_kind("Deployment")
    (service,) = by_kind("Service")
    pod = deployment["spec"]["template"]
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    accounts = {d["metadata"]["name"] for d in by_kind("ServiceAccount")}
    assert pod["spec"]["serviceAccountName"] in accounts
    for binding in by_kind("RoleBinding") + by_kind("ClusterRoleBinding"):
        assert {s["name"] for s in binding["subjects"]} <= accounts
        roles = by_kind(binding["roleRef"]["kind"])
        assert binding["roleRef"]["name"] in {r["metadata"]["name"] for r in roles}
    (cm,) = by_kind("ConfigMap")
    mounted = {v["configMap"]["name"] for v in pod["spec"]["volumes"] if "configMap" in v}
    assert cm["metadata"]["name"] in mounted
    config = parse_model(ServerConfig, yaml.safe_load(cm["data"]["sessionsched.yaml"]), "cm")
    k8s = config.cluster.kubernetes
    assert config.cluster.backend == "kubernetes"
    assert k8s.service_account in accounts
    assert k8s.server_url.endswith(f":{service['spec']['ports'][0]['port']}")
    assert {d["metadata"].get("namespace") for d in manifests()} - {None} == {k8s.namespace}


def verbs_seen(requests) -> set[tuple[str, str]]:
    """(resource, verb) of each request, as the API server's authorizer names them."""
    seen = set()
    for r in requests:
        parts = r.path.strip("/").split("/")
        named = len(parts) % 2 == 0  # /api/v1/RES/NAME or /api/v1/namespaces/NS/RES/NAME
        resource = parts[-2] if named else parts[-1]
        watch = "watch=true" in r.query or r.method == "WATCH-WS"
        if r.method in ("GET", "WATCH-WS"):
            seen.add((resource, "watch" if watch else ("get" if named else "list")))
        elif r.method == "POST":
            seen.add((resource, "create"))
        elif r.method == "PATCH":
            seen.add((resource, "patch"))
            if r.content_type == "application/apply-patch+yaml":
                seen.add((resource, "create"))  # apply may create: both are authorized
        elif r.method == "DELETE":
            seen.add((resource, "delete" if named else "deletecollection"))
    return seen


def granted(role_names: set[str]) -> set[tuple[str, str]]:
    out = set()
    for role in by_kind("ClusterRole") + by_kind("Role"):
        if role["metadata"]["name"] in role_names:
            for rule in role["rules"]:
                out |= {(res, verb) for res in rule["resources"] for verb in rule["verbs"]}
    return out


@pytest.fixture
def app_py(tmp_path):
    path = tmp_path / "app.py"
    path.write_text("print('hello')\n")
    return str(path)


def test_scheduler_rbac_is_exactly_what_the_backend_uses(kubernetes_rig, app_py):
    rig, fake = kubernetes_rig, kubernetes_rig.fake
    before = len(fake.requests)
    backend = rig.backend
    launch = Launch(app_id="driver-r", name="r", argv=wrap_argv([app_py]), in_cluster=True)
    backend.launch(launch)
    pod = wait_until(lambda: fake.pods("spark"), 30, "the driver pod")[0]
    fake.set_pod_phase("spark", pod["metadata"]["name"], "Running", node="n1")
    seen: list = []
    wait_until(lambda: seen.extend(backend.poll(time.time()))
               or any(isinstance(e, DriverStarted) for e in seen), 30, "DriverStarted")
    again = rig.new_backend()
    try:
        from sessionsched.backends.base import Handle

        assert again.adopt(Handle("driver-r", "cluster-driver", "spark", 0.0))
        again.capacity()
        again.stop("driver-r")
    finally:
        again.close()
    used = verbs_seen(fake.requests[before:])
    scheduler = {"sessionsched-capacity", "sessionsched-submit"}
    assert used == granted(scheduler), sorted(used)
