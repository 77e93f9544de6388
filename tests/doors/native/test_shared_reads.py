"""The dashboard's reads are cheap for the server (doors/native/shared_answers.py): built once
per published view (or once a second, the overview) and shared by every reader, an unchanged
answer a 304 to its ETag, the usage shared only with a reader who accepts an older answer."""

from __future__ import annotations

from sessionsched.backends.memory import WORK
from sessionsched.doors.native.shared_answers import SharedAnswers


def builds(s) -> int:
    shared = getattr(s.client.app.state, "shared_answers", None)
    return shared.builds if shared is not None else 0


def test_the_overview_is_the_four_reads_in_one_shared_and_304_while_unchanged(stepped):
    with stepped(admission="none") as s:
        a = s.submit("one", **{WORK: "60"})
        s.until(a, "RUNNING")
        r = s.client.get("/api/v1/overview")
        assert r.status_code == 200 and set(r.json()) == {"health", "queues", "apps", "cluster"}
        got = r.json()
        assert got["queues"] == s.client.get("/api/v1/queues").json()
        assert got["apps"] == s.client.get("/api/v1/apps").json()
        assert got["cluster"] == s.client.get("/api/v1/cluster").json()
        health = s.client.get("/api/v1/health").json()
        assert {k: v for k, v in got["health"].items() if k != "store"} == {
            k: v for k, v in health.items() if k != "store"}
        etag, made = r.headers["etag"], builds(s)
        again = s.client.get("/api/v1/overview", headers={"If-None-Match": etag})
        assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", etag)
        assert builds(s) == made  # the kept answer: nothing built again
        assert int(again.headers["age"]) <= 1


def test_lists_are_built_once_per_view_and_304_to_their_etag(stepped):
    with stepped(admission="none") as s:
        a = s.submit("one", **{WORK: "60"})
        s.until(a, "RUNNING")
        for path in ("/api/v1/apps", "/api/v1/queues", "/api/v1/apps?state=RUNNING"):
            first = s.client.get(path)
            made = builds(s)
            second = s.client.get(path)  # another reader, the same view
            assert second.content == first.content and builds(s) == made
            same = s.client.get(path, headers={"If-None-Match": first.headers["etag"]})
            assert (same.status_code, same.content) == (304, b"")
            assert "age" not in first.headers  # built for the view published now
        before = s.client.get("/api/v1/apps").headers["etag"]
        s.cycle(30)  # the app's executors run on: a new view
        s.submit("two")
        after = s.client.get("/api/v1/apps", headers={"If-None-Match": before})
        assert after.status_code == 200 and [x["name"] for x in after.json()] == ["one", "two"]


def test_queues_show_the_memory_their_executors_hold_and_want(stepped):
    with stepped(admission="none") as s:
        a = s.submit("one", **{WORK: "60", "spark.executor.memory": "2g",
                                "spark.dynamicAllocation.maxExecutors": "1"})
        s.until_true(lambda: s.app(a)["executors"] == 1, "an executor up")
        rows = {q["name"]: q for q in s.client.get("/api/v1/queues").json()}
        app = s.app(a)
        for name in ("root", "root.default"):
            held, wanted = rows[name]["executor_memory_mib"], rows[name]["demand_memory_mib"]
            per = held // app["executors"]
            assert per >= 2048 and held == app["executors"] * per  # 2g and its overhead
            assert wanted == app["demand"] * per


def test_usage_is_shared_only_with_a_reader_who_accepts_an_older_answer(stepped):
    with stepped(admission="none") as s:
        a = s.submit("one", **{WORK: "60"})
        s.until(a, "RUNNING")
        path = "/api/v1/usage?by=queue&since=0"
        plain = s.client.get(path)
        assert "etag" not in plain.headers and "age" not in plain.headers  # as it always was
        made = builds(s)
        first = s.client.get(path, headers={"Cache-Control": "max-age=60"})
        second = s.client.get(path, headers={"Cache-Control": "max-age=60"})
        assert first.json() == second.json() == plain.json()
        assert builds(s) == made + 1 and int(second.headers["age"]) <= 60
        fresh = s.client.get(path, headers={"Cache-Control": "max-age=0"})
        assert "age" not in fresh.headers  # max-age=0: built now, as without the header


def test_at_most_so_many_answers_are_kept():
    shared = SharedAnswers(kept=3)
    for i in range(10):
        found = shared.within(("q", i), 60, lambda i=i: str(i).encode())
        assert found.body == str(i).encode()
    assert len(shared._entries) <= 3 and len(shared._locks) <= 3
    again = shared.within(("q", 9), 60, lambda: b"rebuilt")
    assert again.body == b"9" and shared.builds == 10  # the newest is still kept
