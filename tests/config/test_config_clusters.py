"""The ``clusters:`` registry (docs/operator/clusters.md): today's ``cluster:`` is a registry
of one named ``default``; mistakes are one line naming the key."""

import pytest

from sessionsched.backends import create_backends
from sessionsched.backends.local import LocalCluster
from sessionsched.config import ConfigError, ServerConfig, load_server_config

TWO = """
clusters:
  - {name: a, backend: memory, cores: 4, labels: {rack: r1}}
  - {name: b, backend: memory, workers: 2, cores: 8, weight: 2, lost_timeout: 120}
placement: most_free
queues: [{name: default}, {name: gpu, clusters: [b]}]
"""


def write(tmp_path, text):
    p = tmp_path / "sessionsched.yaml"
    p.write_text(text)
    return p


def test_cluster_is_a_registry_of_one_named_default():
    config = ServerConfig.model_validate({"cluster": {"backend": "memory", "cores": 4}})
    (only,) = config.cluster_registry()
    assert (only.name, only.backend, only.cores, only.weight, only.lost_timeout) == (
        "default", "memory", 4, 1.0, 600.0)
    assert ServerConfig().cluster_registry()[0].backend == "standalone"


def test_clusters_are_named_in_their_order(tmp_path):
    config = load_server_config(write(tmp_path, TWO))
    a, b = config.cluster_registry()
    assert (a.name, a.cores, a.labels, b.name, b.workers, b.weight, b.lost_timeout) == (
        "a", 4, {"rack": "r1"}, "b", 2, 2.0, 120.0)
    assert config.placement == "most_free"


@pytest.mark.parametrize("text, message", [
    ("cluster: {backend: memory}\nclusters: [{name: a, backend: memory}]",
     "cluster: and clusters: both set"),
    ("clusters: [{name: a, backend: memory}, {name: a, backend: memory}]",
     "clusters[1].name: 'a' is already the name of clusters[0]"),
    ("clusters: [{name: a, backend: memory}]\nqueues: [{name: default}, {name: x, clusters: [z]}]",
     "queues: root.x.clusters: unknown cluster 'z' (clusters: a)"),
    ("queues: [{name: default, clusters: [a]}]", "unknown cluster 'a' (clusters: default)"),
    ("clusters: [{name: a}]\nqueues: [{name: default, max_cores_per_cluster: {b: 4}}]",
     "queues: root.default.max_cores_per_cluster: unknown cluster 'b' (clusters: a)"),
    ("clusters: [{name: a}]\nqueues: [{name: default, max_resources_per_cluster: {b: {gpu: 1}}}]",
     "queues: root.default.max_resources_per_cluster: unknown cluster 'b' (clusters: a)"),
    ("clusters: [{name: a}]\nqueues: [{name: default, max_resources_per_cluster: {a: {gpu: -1}}}]",
     "max_resources_per_cluster.a"),
    ("clusters: [{backend: memory}]", "clusters[0].name: missing"),
    ("clusters: [{name: 'a,b', backend: memory}]", "clusters[0].name: 'a,b': a cluster's name"),
    ("clusters: [{name: a, weight: 0}]", "clusters[0].weight: Input should be greater than 0"),
    ("clusters: [{name: a, lost_timeout: -1}]", "clusters[0].lost_timeout: Input should be"),
    ("clusters: [{name: a, backend: standalone, cores: 4}]",
     "cores is a setting of the memory backend only"),
    ("clusters: []", "clusters: List should have at least 1 item"),
    ("clusters: [{name: a}]\nplacement: nearest", "placement: Input should be 'spill'"),
    ("clusters: [{name: a, backend: standalone, dir: /tmp/a}]",
     "dir is a setting of the local backend only (backend is standalone)"),
], ids=["both", "duplicate name", "queue names unknown", "one cluster is default",
        "a cap on an unknown cluster", "a GPU cap on an unknown cluster", "a negative GPU cap",
        "unnamed", "comma in name", "weight", "lost_timeout", "memory setting elsewhere",
        "empty", "placement", "a local dir elsewhere"])
def test_bad_clusters_give_one_line_naming_the_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_server_config(path)
    line = str(err.value)
    assert "\n" not in line
    assert message in line, line


def test_local_clusters_are_read_each_from_its_own_dir(tmp_path):
    """Two clusters ``sessionsched cluster up --dir`` recorded (not running: their records
    are what the backends read), served as ``local`` entries, each from its ``dir``."""
    for name, port in (("a", 7177), ("b", 7277)):
        (tmp_path / name).mkdir()
        LocalCluster(tmp_path / name, port=port, ui_port=port + 3, rest_port=port + 1)._save()
    config = load_server_config(write(tmp_path, f"""
server: {{state_dir: {tmp_path / 'state'}}}
clusters:
  - {{name: a, backend: local, dir: {tmp_path / 'a'}}}
  - {{name: b, backend: local, dir: {tmp_path / 'b'}}}
"""))
    backends = create_backends(config)
    try:
        assert {n: b.master for n, b in backends.items()} == {
            "a": "spark://127.0.0.1:7177", "b": "spark://127.0.0.1:7277"}
    finally:
        for b in backends.values():
            b.close()
