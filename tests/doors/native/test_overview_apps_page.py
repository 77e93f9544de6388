"""The overview's apps cut on the server for the dashboard's table (doors/native/apps_page.py):
the apps a filter and search match, in the list's order, the first ``limit`` of them, with the
counts and the users; without the parameters the answer is the whole list, as before."""

from __future__ import annotations

from sessionsched.backends.memory import WORK


def ids(answer: dict) -> list[str]:
    return [a["id"] for a in answer["apps"]]


def test_the_overview_cuts_the_apps_to_the_tables_query(stepped):
    with stepped(admission="none") as s:
        a = s.submit("nightly-a", **{WORK: "60"})
        b = s.submit("Nightly-B", **{WORK: "60"})
        c = s.submit("report", **{WORK: "60"})
        s.until(a, "RUNNING")
        full = s.client.get("/api/v1/apps").json()

        def overview(query: str) -> dict:
            r = s.client.get("/api/v1/overview?" + query)
            assert r.status_code == 200, r.text
            return r.json()

        got = overview("limit=2")
        assert set(got) == {"health", "queues", "apps", "cluster", "apps_matched",
                            "apps_total", "apps_users"}
        assert got["apps"] == full[:2]  # the list's order, its rows as /api/v1/apps has them
        assert (got["apps_matched"], got["apps_total"]) == (3, 3)
        assert got["apps_users"] == sorted({x["user"] for x in full})
        assert ids(overview("search=NIGHTLY")) == [x["id"] for x in full if x["id"] in (a, b)]
        assert ids(overview("search=" + c)) == [c]
        assert ids(overview("search=%20" + c.upper() + "%20")) == [c]
        queue = full[0]["queue"]
        assert len(overview("queue=" + queue)["apps"]) == sum(x["queue"] == queue for x in full)
        assert overview("queue=root.none")["apps"] == []
        state = s.app(a)["state"]
        assert a in ids(overview("state=" + state.lower()))
        user = full[0]["user"]
        assert overview("user=" + user)["apps_matched"] == 3
        assert overview("user=nobody&limit=5")["apps_matched"] == 0
        assert overview("limit=0")["apps"] == [] and overview("limit=0")["apps_total"] == 3
        assert set(s.client.get("/api/v1/overview").json()) == {
            "health", "queues", "apps", "cluster"}  # no parameter: the whole list, as before


def test_the_overview_refuses_a_bad_apps_query(stepped):
    with stepped(admission="none") as s:
        r = s.client.get("/api/v1/overview?state=sleeping")
        assert r.status_code == 400 and "unknown state" in r.json()["detail"]
        assert s.client.get("/api/v1/overview?limit=-1").status_code == 422
        assert s.client.get("/api/v1/overview?limit=many").status_code == 422


def test_pages_with_the_same_query_share_one_answer(stepped):
    with stepped(admission="none") as s:
        a = s.submit("one", **{WORK: "60"})
        s.until(a, "RUNNING")
        first = s.client.get("/api/v1/overview?limit=100")
        made = s.client.app.state.shared_answers.builds
        second = s.client.get("/api/v1/overview?limit=100")
        assert second.content == first.content
        assert s.client.app.state.shared_answers.builds == made
        same = s.client.get("/api/v1/overview?limit=100",
                            headers={"If-None-Match": first.headers["etag"]})
        assert same.status_code == 304
