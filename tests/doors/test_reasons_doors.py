"""A waiting app's reason code and sentence on every door (docs/user/reasons.md): the native API
(app and queue), Spark REST status, Livy's batch (beside ``schedulerReason`` and in
``appInfo``) and the ``sessionsched_waiting_apps`` gauge - the real service on the memory
cluster, stepped by hand."""

from __future__ import annotations


def metric(text: str, queue: str, code: str) -> float | None:
    head = f'sessionsched_waiting_apps{{queue="{queue}",reason_code="{code}"}} '
    for line in text.splitlines():
        if line.startswith(head):
            return float(line[len(head):])
    return None


def test_the_head_and_the_apps_behind_it_say_why_on_every_door(stepped):
    with stepped(admission="stateaware") as s:
        ids = [s.submit(f"burst-{i}") for i in range(3)]
        s.cycle()
        first, head, behind = (s.app(i) for i in ids)
        assert first["state"] == "STARTING" and first["reason_code"] is None
        assert (head["reason_code"], head["reason"]) == (
            "starting_limit", "1 app(s) of root.default are starting: its starting_limit is 1")
        assert behind["reason_code"] == "behind_app"
        assert behind["reason"] == (
            f"behind {ids[1]}, the head of root.default (1 app(s) ahead of it), which waits: "
            f"{head['reason']}")

        queues = {q["name"]: q for q in s.client.get("/api/v1/queues").json()}
        assert queues["root.default"]["waiting_reason_code"] == "starting_limit"
        assert queues["root"]["waiting_reason_code"] is None

        rest = s.client.get(f"/v1/submissions/status/{ids[2]}").json()
        assert (rest["schedulerReasonCode"], rest["schedulerReason"]) == (
            "behind_app", behind["reason"])

        batches = s.client.get("/batches").json()["sessions"]
        batch = next(b for b in batches if b["submissionId"] == ids[1])
        assert batch["schedulerReasonCode"] == "starting_limit"
        assert batch["appInfo"]["schedulerReasonCode"] == "starting_limit"
        assert batch["appInfo"]["schedulerReason"] == head["reason"]

        text = s.client.get("/metrics").text
        assert metric(text, "root.default", "starting_limit") == 1
        assert metric(text, "root.default", "behind_app") == 1

        s.until(ids[0], "RUNNING")  # its first executor: the next one may start
        s.cycle()
        assert s.app(ids[1])["reason_code"] is None  # started: no wait any more
        assert s.app(ids[2])["reason_code"] == "starting_limit"  # the head now
        text = s.client.get("/metrics").text
        assert metric(text, "root.default", "starting_limit") == 1
        assert metric(text, "root.default", "behind_app") is None


def test_an_app_behind_names_its_new_head_when_the_head_changes_and_its_place_does_not(stepped):
    """Answers are kept between reads (``ReadView._read``): an app whose place and its queue's
    wait stay the same while another app becomes the head must still name the new head."""
    with stepped(admission="stateaware") as s:
        ids = [s.submit(f"burst-{i}", priority=p) for i, p in enumerate((5000,) * 3 + (4000,))]
        s.cycle()
        last = s.app(ids[3])
        assert (last["position"], last["reason_code"]) == (3, "behind_app")
        assert last["reason"].startswith(f"behind {ids[1]}, the head of root.default")
        s.done(s.service.set_priority(ids[1], 4500))  # between the two behind it
        assert [s.app(i)["position"] for i in ids[1:]] == [2, 1, 3]
        again = s.app(ids[3])
        assert again["reason"] == (
            f"behind {ids[2]}, the head of root.default (2 app(s) ahead of it), which waits: "
            "1 app(s) of root.default are starting: its starting_limit is 1")
