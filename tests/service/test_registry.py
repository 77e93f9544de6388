"""The registry (``Submissions``) by queue: one queue's list copies only that queue's apps (a
cycle's work follows what changed, docs/design/bounded-cycles.md)."""

import pytest

from sessionsched.model import AppSpec
from sessionsched.model.submission import Submission
from sessionsched.service.registry import Submissions


def sub(app_id: str, queue: str, seq: int = 0) -> Submission:
    spec = AppSpec(app_id=app_id, queue=queue, seq=seq, submitted_at=0.0, name=app_id, user="u")
    return Submission(spec=spec, kind="batch")


def filled() -> Submissions:
    reg = Submissions()
    for i, q in enumerate(["root.a", "root.b", "root.a"]):
        reg.put(sub(f"app-{i}", q, i))
    return reg


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda reg: None, {"root.a": ["app-0", "app-2"], "root.b": ["app-1"]}),
        (lambda reg: reg.drop(["app-0", "app-1"]), {"root.a": ["app-2"], "root.b": []}),
        (lambda reg: reg.launched("app-2", "/logs/app-2"),
         {"root.a": ["app-0", "app-2"], "root.b": ["app-1"]}),
        (lambda reg: reg.put(sub("app-0", "root.b", 0)),
         {"root.a": ["app-2"], "root.b": ["app-1", "app-0"]}),
        (lambda reg: reg.drop(["nobody"]), {"root.a": ["app-0", "app-2"], "root.b": ["app-1"]}),
    ],
    ids=["each queue lists its own, in the order put",
         "dropped apps leave their queue",
         "a launched app stays in its queue, with its log",
         "an app put again in another queue moves",
         "dropping an unknown id changes nothing"],
)
def test_snapshot_of_one_queue(change, expected):
    reg = filled()
    change(reg)
    for queue, ids in expected.items():
        assert list(reg.snapshot(queue)) == ids
    everyone = reg.snapshot()
    assert sorted(everyone) == sorted(i for ids in expected.values() for i in ids)
    assert all(reg.snapshot(s.queue)[s.id] == s for s in everyone.values())
    assert reg.snapshot("root.nope") == {}
