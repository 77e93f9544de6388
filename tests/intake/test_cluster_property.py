"""``spark.sessionsched.cluster``: the clusters a submission may run on, checked at intake
against the server's clusters and its queue's (docs/operator/clusters.md)."""

from __future__ import annotations

import pytest

from sessionsched.config import ServerConfig
from sessionsched.intake import new_apps

CONFIG = ServerConfig.model_validate({
    "clusters": [{"name": "a", "backend": "memory"}, {"name": "b", "backend": "memory"}],
    "queues": [{"name": "default"}, {"name": "onlya", "clusters": ["a"]}]})
TWO = new_apps.Defaults(root=CONFIG.queue_tree(), queue="root.default", clusters=("a", "b"))
ONE = new_apps.Defaults(root=ServerConfig().queue_tree(), queue="root.default")


def _clusters(value, queue=None, defaults=TWO):
    conf = {} if value is None else {"spark.sessionsched.cluster": value}
    return new_apps.from_session("nb", queue, None, conf, defaults).spec.clusters


@pytest.mark.parametrize("value, queue, expected", [
    (None, None, ()),
    ("b", None, ("b",)),
    ("b, a,b", None, ("b", "a")),
    ("a,b", "onlya", ("a", "b")),  # the queue narrows it at placement: a
    ("default", None, ("default",)),
], ids=["unset", "one", "several, once each", "narrowed by the queue", "one cluster"])
def test_asked_clusters_are_kept(value, queue, expected):
    defaults = ONE if value == "default" else TWO
    assert _clusters(value, queue, defaults) == expected


@pytest.mark.parametrize("value, queue, defaults, message", [
    ("c", None, TWO, "spark.sessionsched.cluster=c: unknown cluster 'c' (clusters: a, b)"),
    ("a,zz", None, TWO, "unknown cluster 'zz' (clusters: a, b)"),
    (",", None, TWO, "unknown cluster ','"),
    ("b", "onlya", TWO, "spark.sessionsched.cluster=b: no cluster it may use: it asked for b; "
                        "its queue root.onlya may use a"),
    ("a", None, ONE, "unknown cluster 'a' (clusters: default)"),
], ids=["unknown", "one of them unknown", "no name", "none the queue allows",
        "one cluster is default"])
def test_refused_naming_what_it_asked_for(value, queue, defaults, message):
    with pytest.raises(new_apps.SubmissionError) as err:
        _clusters(value, queue, defaults)
    assert message in str(err.value)
