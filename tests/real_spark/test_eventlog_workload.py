"""Event logs written by real Spark (pyspark 4.0.1's) read back into a workload: one small app
per codec Spark offers for event logs (``spark.eventLog.compression.codec``: lz4, lzf,
snappy, zstd) as single files, and one rolling log (``spark.eventLog.rolling.enabled``: an
``eventlog_v2_<app id>`` directory), run against the session's cluster one after another by
one spark-submit: the driver starts a SparkContext per log and stops it before the next (each
its own application, its own id and log, as five spark-submits would make, without four more
driver JVMs to start on a 2-core machine). The workload
they make names each app, has its two stages (4 map tasks of unequal lengths, then 2 reduce
tasks after them) and its sizes, and ``sessionsched simulate`` runs it as is; a truncated copy
and a foreign file among the logs are each named on one line and left out."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from sessionsched.eventlog import build
from sessionsched.eventlog.build import read_apps
from tests.sparkcluster import SLACK, SMALL, conf_args, spark_submit_process

pytestmark = pytest.mark.cluster

CODECS = ("lz4", "lzf", "snappy", "zstd")

APP = '''"""Five applications in turn, one per event log: each a map stage of 4 tasks (task i
sleeps 0.6 * i s) and a reduce stage of 2 after it. argv: name=conf;conf... per application,
where each conf is key:value."""
import sys
import time

from pyspark import SparkConf, SparkContext


def slow(i, rows):
    time.sleep(0.6 * i)
    return ((x % 3, x) for x in rows)


for spec in sys.argv[1:]:
    name, _, confs = spec.partition("=")
    conf = SparkConf().setAppName(name)
    for kv in confs.split(";"):
        key, _, value = kv.partition(":")
        conf.set(key, value)
    sc = SparkContext(conf=conf)
    pairs = sc.parallelize(range(40), 4).mapPartitionsWithIndex(slow)
    print(name, sorted(pairs.reduceByKey(lambda a, b: a + b, 2).collect()), flush=True)
    sc.stop()
'''


def test_logs_of_every_codec_and_a_rolling_log_make_a_workload(spark_cluster, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    app = tmp_path / "stages.py"
    app.write_text(APP)
    specs = [f"el-{codec}=spark.eventLog.rolling.enabled:false;"
             f"spark.eventLog.compression.codec:{codec}" for codec in CODECS]
    specs.append("el-rolling=spark.eventLog.rolling.enabled:true;"
                 "spark.eventLog.compression.codec:zstd")
    conf = {**SMALL, "spark.cores.max": "2", "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": logs.as_uri(), "spark.eventLog.compress": "true"}
    log = tmp_path / "apps.log"
    with spark_submit_process(["--master", spark_cluster.master_url, *conf_args(conf),
                               str(app), *specs], log) as proc:
        assert proc.wait(timeout=SLACK * 300) == 0, log.read_text()[-3000:]

    names = sorted(p.name for p in logs.iterdir() if not p.name.startswith("."))
    suffixes = sorted(n.rsplit(".", 1)[1] for n in names if not n.startswith("eventlog_v2_"))
    assert suffixes == sorted(CODECS), names
    (rolling,) = [logs / n for n in names if n.startswith("eventlog_v2_")]
    parts = sorted(p.name for p in rolling.iterdir())
    assert any(p.startswith("appstatus_") for p in parts), parts
    assert any(p.startswith("events_1_") and p.endswith(".zstd") for p in parts), parts

    # A truncated copy and a foreign file beside them: each left out with one line.
    lz4 = next(p for p in logs.iterdir() if p.name.endswith(".lz4"))
    (logs / "app-cut.lz4").write_bytes(lz4.read_bytes()[: lz4.stat().st_size // 2])
    (logs / "notes.txt").write_text("not an event log\n")

    built = build([logs])
    assert built.apps == 5
    assert sorted(built.skipped) == [
        f"{logs / 'app-cut.lz4'}: skipped: truncated lz4 stream",
        f"{logs / 'notes.txt'}: skipped: unknown codec 'txt' (Spark writes lz4, lzf, snappy, "
        "zstd)"]
    workload = yaml.safe_load(built.text)
    apps = {a["name"]: a for a in workload["apps"]}
    assert sorted(apps) == sorted([f"el-{c}" for c in CODECS] + ["el-rolling"])
    for a in apps.values():
        assert a["driver"] == {"cores": 1, "memory": "512m", "in_cluster": False}
        assert a["executor"] == {"cores": 1, "memory": "512m"}
        assert a["min_executors"] == a["max_executors"] == 2  # static: the 2 it held
        (mapped, reduced) = a["stages"]
        assert (mapped["tasks"], reduced["tasks"]) == (4, 2)
        assert reduced["after"] == [mapped["id"]]
        assert mapped["task_s"] > 0 and a.get("warmup_s", 0) >= 0
        assert a["submit"] >= 0 and a["startup_s"] > 0
    read, _ = read_apps(sorted(p for p in logs.iterdir() if p.name in names))
    for _, facts in read:
        # 0 s to 1.8 s of sleep, plus each task's own time (a Python worker's start, too: the
        # first task on each executor, ``warmup_s`` in the workload, up to a second when the
        # machine is loaded, so the sleeps differ by more than that; 0.3 s steps were hidden
        # by it)
        (mapped, _) = facts.stages
        assert max(mapped.durations_ms) >= 1800, facts.name
        assert max(mapped.durations_ms) - min(mapped.durations_ms) >= 300, facts.name
        firsts = {t.executor_id for t in facts.first_tasks}  # each executor's first task
        assert firsts and firsts <= {e.executor_id for e in facts.executors}, facts.name
    assert min(a["submit"] for a in apps.values()) == 0
    assert workload["cluster"]["workers"] == 1

    out = tmp_path / "workload.yaml"
    made = subprocess.run([sys.executable, "-m", "sessionsched.cli", "workload",
                           "from-eventlogs", str(logs), "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    assert "cluster inferred from the logs" in made.stderr
    assert out.read_text() == built.text
    ran = subprocess.run([sys.executable, "-m", "sessionsched.cli", "simulate", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert "completed 5" in ran.stdout, ran.stdout
