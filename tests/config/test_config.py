"""Config validation: good files load, bad ones give one line naming the path and the problem."""

import json

import pytest

from sessionsched.client.errors import SchedulerError
from sessionsched.client.settings import CONFIG_ENV as CLIENT_CONFIG_ENV
from sessionsched.client.settings import user_config
from sessionsched.config import (
    ConfigError,
    QueueConfig,
    ServerConfig,
    build_queue_tree,
    load_server_config,
    resolve_queue,
)
from sessionsched.config.tokens_file import TokenFileError, read_entries
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


def test_connect_share_level_is_inherited_and_session_by_default(tmp_path):
    text = """
defaults: {queue: a}
queues:
  - name: root
    queues:
      - {name: a}
      - {name: team, connect_share_level: USER, queues: [{name: b}, {name: c,
         connect_share_level: session}]}
"""
    cfg = load_server_config(write(tmp_path, text))
    levels = {leaf: cfg.connect_share_level(leaf).value
              for leaf in ("root.a", "root.team.b", "root.team.c")}
    assert levels == {"root.a": "session", "root.team.b": "user", "root.team.c": "session"}
    assert ServerConfig().connect_share_level("root.default").value == "session"


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
            "queues: [{name: root, queues: [{name: a, connect_share_level: team}]}]",
            "queues[0].queues[0].connect_share_level: 'team' is not one of session, user",
        ),
        (
            "cluster: {backend: kubernetes, kubernetes: {image: spark:4}}\nconnect: {port: 15002}",
            "connect: the Spark Connect door's drivers run on the scheduler's host",
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
         "queues: [{name: a}]", "usage_half_life: Input should be a finite number"),
        ("queues: [{name: a, reclaim_timeout: -5}]", "queues[0].reclaim_timeout: -5.0 is not -1"),
        ("queues: [{name: a, reclaim_timeout: .nan}]",
         "queues[0].reclaim_timeout: Input should be a finite number"),
        ("queues: [{name: a, weight: .inf}]", "queues[0].weight: Input should be a finite number"),
        # Pydantic's lax mode read true as 1: a queue capped at 1 core without a word
        ("queues: [{name: a, max_cores: true}]", "queues[0].max_cores: expected a number, not "
                                                 "true"),
        ("server: {cycle_ms: false}", "server.cycle_ms: expected a number, not false"),
        ("cluster: {backend: memory, worker_groups: [{count: 1, cores: 4, memory: 4g, "
         "resources: {gpu: true}}]}",
         "cluster.worker_groups[0].resources: gpu: expected a number, not true"),
        ("server: {session_timeout: .inf}",
         "server.session_timeout: Input should be a finite number"),
        ("queues: [{name: a, starting_limit: 0}]", "queues[0].starting_limit: Input should be"),
        ("queues: [{name: a.b}]", "queues[0].name: 'a.b' is not a queue name"),
        ("queues: [{name: a}, {name: a}]", "two children named 'a'"),
        ("queues: [{name: a, colour: red}]", "queues[0].colour: unknown setting"),
        ("queues: [{name: root, queues: [{name: a, polcy: fifo}]}]\ndefaults: {queue: a}",
         "queues[0].queues[0].polcy: unknown setting; did you mean 'policy'?"),
        ("cluster: {backend: memory, worker_groups: [{count: 1, cores: 4, memory: 4g, "
         "resourcess: {gpu: 1}}]}",
         "cluster.worker_groups[0].resourcess: unknown setting; did you mean 'resources'?"),
        (
            "defaults: {queue: nope}",
            "defaults.queue: unknown queue 'nope'; known queues: root.default",
        ),
        (  # a tree without root.default, and defaults.queue not set
            "queues: [{name: root, queues: [{name: etl}, {name: ml}]}]",
            "defaults.queue: not set, and its default 'root.default' is no queue here: set it to "
            "the one of root.etl, root.ml that apps naming none go to",
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
        ("cluster: {backend: memory, worker_groups: [{count: 1000000000000, cores: 4, "
         "memory: 4g}]}", "cluster.worker_groups[0].count: Input should be less than or equal"),
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
        "connect share level unknown",
        "connect door with the kubernetes backend",
        "driver fraction above 1",
        "driver fraction 0",
        "driver fraction in a plan",
        "zero weight",
        "negative half-life",
        "half-life not a number",
        "half-life NaN in a plan",
        "bad reclaim timeout",
        "reclaim timeout NaN",
        "infinite weight",
        "a cap given as true",
        "a cycle given as false",
        "a map's number given as true",
        "infinite session timeout",
        "zero starting limit",
        "dotted name",
        "duplicate sibling",
        "unknown key",
        "a misspelt key, deep in the tree",
        "a misspelt key in a list of a section",
        "unknown default queue",
        "the default queue not set, and not in the tree",
        "default priority out of range",
        "port not a number",
        "auth tokens without a tokens file",
        "broken yaml",
        "not a mapping",
        "unknown backend",
        "memory backend: bad worker memory",
        "memory backend: no workers",
        "memory backend: more workers than memory can list",
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


def test_a_setting_given_twice_is_refused_a_merged_one_may_be_set_again(tmp_path):
    with pytest.raises(ConfigError, match="line 4 not valid YAML: found 'queue' twice"):
        load_server_config(write(tmp_path, "defaults:\n  queue: root.etl\n  priority: 1\n"
                                           "  queue: root.adhoc\n"))
    merged = ("defaults: {queue: root.etl}\nqueues:\n  - name: root\n    queues:\n"
              "      - &q {name: etl, policy: fifo}\n"
              "      - {<<: *q, name: adhoc, policy: fairshare}\n")
    root = load_server_config(write(tmp_path, merged)).queue_tree()
    assert [(q.name, q.policy) for q in root.leaves()] == [
        ("root.etl", Policy.FIFO), ("root.adhoc", Policy.FAIRSHARE)]


def _server_config(path):
    load_server_config(path)


def _tokens_file(path):
    read_entries(path)


def _client_file(path):
    path.chmod(0o600)  # a client file others may read is refused before it is read
    user_config({CLIENT_CONFIG_ENV: str(path)})


NOT_TEXT = {  # each reader of a file a user writes, given bytes that are not UTF-8
    "server config": (_server_config, ConfigError, "not UTF-8 text (byte 5 does not decode)"),
    "tokens file": (_tokens_file, TokenFileError, "byte 5 does not decode as UTF-8"),
    "client file": (_client_file, SchedulerError, "not a readable YAML file"),
}


@pytest.mark.parametrize("read, error, message", NOT_TEXT.values(), ids=NOT_TEXT.keys())
def test_a_file_that_is_not_text_is_named_in_one_line(tmp_path, read, error, message):
    path = tmp_path / "file"
    path.write_bytes(b"queue\xff\xfe: x\n")
    with pytest.raises(error) as err:
        read(path)
    line = str(err.value)
    assert "\n" not in line and line.startswith(str(path)) and message in line, line


ROW = {"id": "0123456789ab", "user": "alice", "role": "user", "sha256": "ab" * 32,
       "created": 1.7e9}
BAD_TOKENS = {  # a tokens file edited by hand: refused when read, not at a later use
    "a null id": ({**ROW, "id": None}, "id None is not a string"),
    "a created that is no time": ({**ROW, "created": "x"}, "created 'x' is not a time"),
    "a created beyond any date": ({**ROW, "created": 1e300}, "created 1e+300 is not a time"),
    "a token that is no map": (None, "a token is a map of id, user, role, sha256, created"),
    # said in Python's words before ("__init__() missing 1 required positional argument")
    "a row without a field": ({k: v for k, v in ROW.items() if k != "sha256"},
                              "a token has the fields id, user, role, sha256, created; "
                              "'0123456789ab' lacks sha256"),
    "a row with a field too many": ({**ROW, "expires": 1},
                                    "'expires' is not one of them"),
}


@pytest.mark.parametrize("row, message", BAD_TOKENS.values(), ids=BAD_TOKENS.keys())
def test_a_tokens_file_row_of_wrong_types_is_named(tmp_path, row, message):
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"tokens": [ROW, row]}))
    with pytest.raises(TokenFileError) as err:
        read_entries(path)
    line = str(err.value)
    assert line.startswith(f"{path}: not a sessionsched tokens file (") and message in line


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


# --- the queued apps' limits: inherited down the tree, a child's own setting wins -----------

LIMITS = """
defaults: {queue: root.etl}
queues:
  - name: root
    max_wait: 3600
    max_queued_apps_per_user: 5
    queues:
      - {name: etl, max_queued_apps: 100}
      - name: science
        max_wait: 600
        queues:
          - {name: nb}
          - {name: batch, max_wait: null, max_queued_apps_per_user: 2}
      - {name: adhoc}
"""


def _limits(q):
    return q.max_wait_s, q.max_queued_apps, q.max_queued_apps_per_user


# leaf: (max_wait_s, max_queued_apps, max_queued_apps_per_user)
INHERITED = {
    "root.etl": (3600, 100, 5),  # its own cap; root's max_wait and per-user cap
    "root.science.nb": (600, None, 5),  # its parent's max_wait wins over root's
    "root.science.batch": (None, None, 2),  # an explicit null turns an inherited limit off
    "root.adhoc": (3600, None, 5),  # root's, two levels down
}


@pytest.mark.parametrize("leaf, expected", INHERITED.items(), ids=INHERITED.keys())
def test_queued_limits_are_inherited_and_a_childs_own_setting_wins(tmp_path, leaf, expected):
    root = load_server_config(write(tmp_path, LIMITS)).queue_tree()
    assert _limits(resolve_queue(root, leaf)) == expected


def test_queued_limits_are_off_by_default():
    assert _limits(ServerConfig().queue_tree().leaves()[0]) == (None, None, None)


def test_a_plan_changes_the_queued_limits_and_its_children_inherit_them(tmp_path):
    text = LIMITS + ("plans:\n  - cron: '0 20 * * *'\n    queues:\n"
                     "      science: {max_wait: 60}\n"
                     "      etl: {max_queued_apps: null, max_queued_apps_per_user: 1}\n")
    cfg = load_server_config(write(tmp_path, text))
    night = cfg.queue_tree(cfg.plans[0])
    assert _limits(resolve_queue(night, "nb")) == (60, None, 5)  # the parent's new max_wait
    assert _limits(resolve_queue(night, "batch")) == (None, None, 2)  # its own null still wins
    assert _limits(resolve_queue(night, "etl")) == (3600, None, 1)  # the cap taken off
    assert _limits(resolve_queue(cfg.queue_tree(), "etl")) == (3600, 100, 5)  # config as is


@pytest.mark.parametrize("text, message", [
    ("queues: [{name: a, max_wait: 0}]", "queues[0].max_wait: Input should be greater than 0"),
    ("queues: [{name: a, max_queued_apps: 0}]",
     "queues[0].max_queued_apps: Input should be greater than or equal to 1"),
    ("queues: [{name: a, max_queued_apps_per_user: -2}]",
     "queues[0].max_queued_apps_per_user: Input should be greater than or equal to 1"),
    ("queues: [{name: a}]\nplans: [{cron: '0 8 * * *', queues: {a: {max_wait: -5}}}]",
     "max_wait: Input should be greater than 0"),
], ids=["max_wait 0", "max_queued_apps 0", "per user negative", "max_wait in a plan"])
def test_bad_queued_limits_give_one_line(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_server_config(path)
    assert "\n" not in str(err.value) and message in str(err.value)



# --- node sorting: per queue, inherited, fair by default (docs/design/placement.md) ---------------

SORTS = """
defaults: {queue: root.etl}
queues:
  - name: root
    node_sort: binpacking
    queues:
      - {name: etl}
      - name: science
        node_sort: fair
        queues: [{name: nb}, {name: big, node_sort: BinPacking}]
"""


@pytest.mark.parametrize("leaf, sort", [("root.etl", "binpacking"), ("root.science.nb", "fair"),
                                        ("root.science.big", "binpacking")],
                         ids=["root's", "the parent's", "its own"])
def test_node_sort_is_inherited_and_a_childs_own_wins(tmp_path, leaf, sort):
    root = load_server_config(write(tmp_path, SORTS)).queue_tree()
    assert resolve_queue(root, leaf).node_sort.value == sort


def test_node_sort_is_fair_by_default_and_a_bad_one_is_one_line(tmp_path):
    assert ServerConfig().queue_tree().leaves()[0].node_sort.value == "fair"
    path = write(tmp_path, "queues: [{name: root, node_sort: spread, queues: [{name: a}]}]")
    with pytest.raises(ConfigError) as err:
        load_server_config(path)
    assert str(err.value).endswith(
        "queues[0].node_sort: 'spread' is not one of fair, binpacking")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("backend, warned", [("standalone", True), ("memory", False)])
def test_binpacking_on_a_standalone_cluster_is_warned_in_one_line(tmp_path, backend, warned):
    text = f"cluster: {{backend: {backend}}}\n" + SORTS
    warnings = load_server_config(write(tmp_path, text)).warnings()
    if not warned:
        assert warnings == []
        return
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert warnings[0].startswith("node_sort binpacking (root.etl, root.science.big) is not"
                                  " honoured on a standalone cluster")
    assert "spark.deploy.spreadOut" in warnings[0]
    assert load_server_config(write(tmp_path, "cluster: {backend: standalone}")).warnings() == []


@pytest.mark.parametrize("clusters, warned", [
    ("cluster: {backend: local}", ""),  # a local standalone cluster: its master places too
    ("clusters: [{name: a, backend: memory}, {name: b, backend: memory}]", None),
    ("clusters: [{name: a, backend: memory}, {name: b, backend: local}]", " (b)"),
])
def test_binpacking_is_warned_for_every_standalone_master_served(tmp_path, clusters, warned):
    warnings = load_server_config(write(tmp_path, f"{clusters}\n{SORTS}")).warnings()
    if warned is None:
        assert warnings == []
        return
    assert len(warnings) == 1
    assert warnings[0].startswith("node_sort binpacking (root.etl, root.science.big) is not"
                                  f" honoured on a standalone cluster{warned}: ")


GUARANTEES = """
defaults: {queue: root.ok}
queues:
  - name: root
    queues:
      - name: etl
        max_cores: 20
        queues:
          - {name: a, min_share: 15}
          - {name: b, min_share: 30, max_cores: 25}
      - {name: adhoc, min_share: 50, max_cores: 40}
      - {name: ok, min_share: 10, max_cores: 10}
"""


def test_a_guarantee_above_a_cap_on_its_path_is_warned_not_refused(tmp_path):
    config = load_server_config(write(tmp_path, "cluster: {backend: memory}\n" + GUARANTEES))
    assert config.warnings() == [
        "queue root.etl: its children's min_share add up to 45, above its max_cores 20; they "
        "share at most 20 cores by weight",
        # the tighter cap is the parent's, not its own 25
        "queue root.etl.b: min_share 30 is above root.etl's max_cores 20; it can give at most "
        "20 cores",
        "queue root.adhoc: min_share 50 is above its max_cores 40; it can give at most 40 cores",
    ]
