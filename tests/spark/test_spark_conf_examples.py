"""The shipped examples in spark-conf/ stay valid as the code changes."""

from pathlib import Path

from sessionsched.config import load_server_config
from sessionsched.spark.submit_args import (
    effective_properties,
    parse_spark_submit,
    scheduling_properties,
)

SPARK_CONF = Path(__file__).resolve().parents[2] / "spark-conf"


def test_example_server_config_loads():
    cfg = load_server_config(SPARK_CONF / "sessionsched.yaml")
    leaves = {q.name: q for q in cfg.queue_tree().leaves()}
    assert set(leaves) == {"root.etl", "root.adhoc", "root.default"}
    assert leaves["root.etl"].policy.value == "priority"
    assert leaves["root.adhoc"].reclaim_mode.value == "idle"
    # The weekday plan puts interactive work first.
    weekday = cfg.queue_tree(cfg.plans[0])
    assert {q.name: q.weight for q in weekday.leaves()}["root.adhoc"] == 10


def test_spark_defaults_template_is_read_as_spark_submit_would():
    props = effective_properties(
        parse_spark_submit(["app.py"]), {"SPARK_CONF_DIR": str(SPARK_CONF)}, "/"
    )
    sched = scheduling_properties(props)
    assert (sched.priority, sched.queue, sched.dynamic_allocation) == (5000, "root.default", True)
    assert props["spark.dynamicAllocation.shuffleTracking.enabled"].value == "true"
    assert "spark.ego.slots.max" not in props  # commented out in the template


def test_example_clusters_config_loads():
    cfg = load_server_config(SPARK_CONF / "sessionsched-clusters.yaml")
    assert [(c.name, c.backend) for c in cfg.cluster_registry()] == [("a", "memory"),
                                                                   ("b", "memory")]
    leaves = {q.name: q for q in cfg.queue_tree().leaves()}
    assert leaves["root.gpu"].clusters == ("b",)
