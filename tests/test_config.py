"""Config validation: good files load, bad ones give one line naming the path and the problem."""

import pytest

from sessionsched.config import (
    ConfigError,
    QueueConfig,
    ServerConfig,
    build_queue_tree,
    load_server_config,
    resolve_queue,
)
from sessionsched.engine.arbitration.decay import half_lives
from sessionsched.model import Admission, Policy, ReclaimMode

GOOD = """
server: {port: 7000, cycle_ms: 250}
cluster: {master: spark://127.0.0.1:7078, driver_slots: 2}
defaults: {queue: root.etl, priority: 4000}
queues:
  - name: root
    queues:
      - {name: etl, admission: reserve, policy: priority, weight: 2, reclaim_timeout: 30}
      - name: science
        max_cores: 16
        queues:
          - {name: notebooks, policy: FAIRSHARE, reclaim_timeout: -1, max_driver_fraction: 0.2}
"""


def write(tmp_path, text):
    p = tmp_path / "sessionsched.yaml"
    p.write_text(text)
    return p


def test_good_file_builds_the_queue_tree(tmp_path):
    cfg = load_server_config(write(tmp_path, GOOD))
    root = cfg.queue_tree()
    assert [q.name for q in root.leaves()] == ["root.etl", "root.science.notebooks"]
    etl, nb = root.leaves()
    assert (etl.admission, etl.policy, etl.weight) == (Admission.RESERVE, Policy.PRIORITY, 2)
    assert etl.reclaim_mode is ReclaimMode.DECOMMISSION
    assert nb.policy is Policy.FAIRSHARE and nb.reclaim_mode is ReclaimMode.IDLE
    assert (nb.admission, nb.max_driver_fraction) == (Admission.DEMAND, 0.2)
    assert root.children[1].max_cores == 16
    assert cfg.defaults.priority == 4000 and cfg.server.cycle_ms == 250


def test_memory_backend_takes_cluster_up_options(tmp_path):
    text = "cluster: {backend: memory, workers: 2, cores: 4, memory: 4g, work_s: 0.5}"
    c = load_server_config(write(tmp_path, text)).cluster
    assert (c.backend, c.workers, c.cores, c.memory, c.work_s) == ("memory", 2, 4, 4096, 0.5)


def test_usage_half_life_is_inherited_and_0_turns_it_off_below(tmp_path):
    text = """
defaults: {queue: a}
queues:
  - name: root
    usage_half_life: 3600
    queues:
      - {name: a}
      - {name: b, usage_half_life: 0}
      - {name: c, usage_half_life: 60}
"""
    root = load_server_config(write(tmp_path, text)).queue_tree()
    assert half_lives(root) == {"root": 3600, "root.a": 3600, "root.c": 60}
    assert half_lives(ServerConfig().queue_tree()) == {}  # off by default


def test_defaults_are_one_default_queue():
    root = ServerConfig().queue_tree()
    assert [q.name for q in root.leaves()] == ["root.default"]
    q = root.leaves()[0]
    assert (q.admission, q.starting_limit, q.starting_timeout_s) == (Admission.DEMAND, 1, 300)
    assert q.max_driver_fraction == 0.4


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "queues: [{name: root, queues: [{name: a}, {name: b, policy: fairness}]}]",
            "queues[0].queues[1].policy: 'fairness' is not one of fifo, priority, fairshare",
        ),
        (
            "queues: [{name: root, queues: [{name: a, admission: gang}]}]",
            "queues[0].queues[0].admission: 'gang' is not one of demand, stateaware, reserve, "
            "none",
        ),
        (
            "queues: [{name: a, max_driver_fraction: 1.5}]",
            "queues[0].max_driver_fraction: 1.5 is not a fraction of the queue's cores above 0 "
            "and at most 1",
        ),
        (
            "queues: [{name: a, max_driver_fraction: 0}]",
            "queues[0].max_driver_fraction: 0 is not a fraction",
        ),
        (
            "plans: [{cron: '0 8 * * *', queues: {a: {max_driver_fraction: -1}}}]\n"
            "queues: [{name: a}]",
            "max_driver_fraction: -1 is not a fraction",
        ),
        ("queues: [{name: a, weight: 0}]", "queues[0].weight: Input should be greater than 0"),
        ("queues: [{name: root, usage_half_life: -60, queues: [{name: a}]}]",
         "queues[0].usage_half_life: -60 is not a half-life in seconds (a positive number, "
         "0: off)"),
        ("queues: [{name: a, usage_half_life: 1d}]",
         "queues[0].usage_half_life: Input should be a valid number"),
        ("plans: [{cron: '0 8 * * *', queues: {a: {usage_half_life: .nan}}}]\n"
         "queues: [{name: a}]", "usage_half_life: nan is not a half-life"),
        ("queues: [{name: a, reclaim_timeout: -5}]", "queues[0].reclaim_timeout: -5.0 is not -1"),
        ("queues: [{name: a, starting_limit: 0}]", "queues[0].starting_limit: Input should be"),
        ("queues: [{name: a.b}]", "queues[0].name: 'a.b' is not a queue name"),
        ("queues: [{name: a}, {name: a}]", "two children named 'a'"),
        ("queues: [{name: a, colour: red}]", "queues[0].colour: unknown setting"),
        (
            "defaults: {queue: nope}",
            "defaults.queue: unknown queue 'nope'; known queues: root.default",
        ),
        ("defaults: {priority: 20000}", "defaults.priority: priority 20000 is outside 1..10000"),
        ("server: {port: http}", "server.port: Input should be a valid integer"),
        ("auth: {mode: tokens}", "auth: mode tokens needs tokens_file (made by 'sessionsched "
                                 "token create --file PATH ...')"),
        ("queues: [a, b", "not valid YAML"),
        ("- just\n- a list\n", "expected a mapping at the top level"),
        ("cluster: {backend: mesos}", "cluster.backend: Input should be 'standalone', 'local'"),
        ("cluster: {backend: memory, memory: lots}",
         "cluster.memory: 'lots' is not a size like 512m or 2g"),
        ("cluster: {backend: memory, workers: 0}", "cluster.workers: Input should be greater"),
        ("cluster: {workers: 2}",
         "cluster: workers is a setting of the memory backend only (backend is standalone)"),
        ("server: {standby: true}", "server.standby: a standby needs a PostgreSQL store shared "
                                    "with the leader (server.db_url: postgresql://...)"),
        ("server: {advertise_url: 'sched-a:6066'}",
         "server.advertise_url: 'sched-a:6066': expected http(s)://HOST:PORT"),
        ("server: {peers: ['http://sched-b:6066', 'sched-c']}",
         "server.peers: 'sched-c': expected http(s)://HOST:PORT"),
    ],
    ids=[
        "unknown policy",
        "unknown admission",
        "driver fraction above 1",
        "driver fraction 0",
        "driver fraction in a plan",
        "zero weight",
        "negative half-life",
        "half-life not a number",
        "half-life NaN in a plan",
        "bad reclaim timeout",
        "zero starting limit",
        "dotted name",
        "duplicate sibling",
        "unknown key",
        "unknown default queue",
        "default priority out of range",
        "port not a number",
        "auth tokens without a tokens file",
        "broken yaml",
        "not a mapping",
        "unknown backend",
        "memory backend: bad worker memory",
        "memory backend: no workers",
        "memory backend settings with another backend",
        "standby on SQLite",
        "advertise url without a scheme",
        "peer without a scheme",
    ],
)
def test_bad_file_gives_one_line_naming_the_problem(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_server_config(path)
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(str(path))
    assert message in line


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_server_config(tmp_path / "nope.yaml")


@pytest.mark.parametrize(
    "name, expected",
    [
        ("root.etl", "root.etl"),
        ("etl", "root.etl"),
        ("science.notebooks", "root.science.notebooks"),
        ("notebooks", "root.science.notebooks"),
    ],
    ids=["full path", "without root", "partial path", "unique leaf name"],
)
def test_resolve_queue(tmp_path, name, expected):
    root = load_server_config(write(tmp_path, GOOD)).queue_tree()
    assert resolve_queue(root, name).name == expected


def test_resolve_queue_names_the_known_queues():
    root = build_queue_tree([QueueConfig(name="a"), QueueConfig(name="b")])
    with pytest.raises(LookupError, match="unknown queue 'c'; known queues: root.a, root.b"):
        resolve_queue(root, "c")
    with pytest.raises(LookupError, match="parent queue"):
        resolve_queue(root, "root")
