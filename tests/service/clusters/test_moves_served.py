"""A launch that started nothing (``BackendUnavailable``) behind two memory clusters, served
and stepped by hand: the app is moved to the other cluster - the move committed (ACCEPTED
again, on no cluster) before it is placed there with its next attempt and launched once - and
a restart adopts it there. With nowhere else to go, the launch is tried again where it is."""

from __future__ import annotations

from collections import Counter

from fastapi.testclient import TestClient

from sessionsched.backends.base import BackendUnavailable
from sessionsched.backends.federated import FederatedBackend
from sessionsched.server.app import create_app
from tests.service.clusters.test_attempts import Tagging
from tests.service.clusters.test_two_clusters import CLUSTERS, QUEUES, Two, rest_submit, running
from tests.support.server_helpers import make_config, rows
from tests.support.stepped_service import Clock, Stepped


class Unreachable(Tagging):
    """A memory cluster whose master cannot be reached for launches while ``down``."""

    def __init__(self, cluster, launches: Counter, tags: dict, down: bool):
        super().__init__(cluster, launches, tags)
        self.down = down
        self.tries = 0

    def launch(self, launch):
        if self.down:
            self.tries += 1
            raise BackendUnavailable("the master cannot be reached (connection refused)")
        return super().launch(launch)


def serve(state_dir, two: Two, tmp_path, clock: Clock, down: set[str], tags: dict):
    (tmp_path / "job.py").write_text("print('hello')\n")
    backends = {n: Unreachable(c, two.launches[n], tags, n in down)
                for n, c in two.clusters.items()}
    config = make_config(state_dir, queues=QUEUES, clusters=CLUSTERS)
    app = create_app(config, FederatedBackend(backends, lambda _app_id: None), run_cycles=False,
                     clock=clock)
    return TestClient(app), backends


def test_a_launch_that_started_nothing_on_a_is_moved_to_b_the_move_committed_first(
        state_dir, tmp_path):
    two, clock, tags = Two(cores_on_a=16), Clock(), {}
    client, backends = serve(state_dir, two, tmp_path, clock, {"a"}, tags)
    with client:
        s = Stepped(client, clock, two.clusters["a"], tmp_path)
        app_id = rest_submit(s, "moved")
        assert running(s, [app_id]) == {app_id: "b"}
        trail = [(e["kind"], e["detail"]) for e in s.events(app_id)]
    assert backends["a"].tries == 1  # tried once on a, never again there
    assert two.launched() == {app_id: 1} and two.launches["b"] == {app_id: 1}
    assert tags == {app_id: ("2", "2")}  # its second placement's attempt
    kinds = [k for k, _ in trail]
    # Placed on a, launch failed (nothing started), taken off a, queued, placed on b: in order.
    placed = [d for k, d in trail if k == "placed"]
    assert placed == ["placed on cluster a (placement 1)", "placed on cluster b (placement 2)"]
    assert kinds.index("retry") < kinds.index("moved") < max(
        i for i, k in enumerate(kinds) if k == "placed") < kinds.index("launch")
    moved = dict(trail)["moved"]
    assert moved == ("taken off cluster a: its launch on cluster a started nothing (the master "
                     "cannot be reached (connection refused)); queued again for b")
    assert ("state", "STARTING -> ACCEPTED: " + moved.split(": ", 1)[1]) in trail
    assert rows(state_dir / "sessionsched.db",
                "SELECT cluster, launch_wait FROM apps") == [("b", None)]
    client, backends = serve(state_dir, two, tmp_path, clock, set(), tags)
    with client:  # a restart: adopted on b, its attempt counted on
        s = Stepped(client, clock, two.clusters["a"], tmp_path)
        s.cycle(1.0)
        assert (s.app(app_id)["state"], s.app(app_id)["cluster"]) == ("RUNNING", "b")
        assert s.service.engine.attempt_of(app_id) == 2
    assert two.launched() == {app_id: 1}


def test_with_nowhere_else_to_go_the_launch_is_tried_again_where_it_is(state_dir, tmp_path):
    two, clock, tags = Two(cores_on_a=16), Clock(), {}
    client, backends = serve(state_dir, two, tmp_path, clock, {"a"}, tags)
    with client:
        s = Stepped(client, clock, two.clusters["a"], tmp_path)
        app_id = rest_submit(s, "only-a", **{"spark.sessionsched.cluster": "a"})
        s.until_true(lambda: backends["a"].tries >= 2, "a second try on a")
        backends["a"].down = False
        assert running(s, [app_id]) == {app_id: "a"}
        kinds = [e["kind"] for e in s.events(app_id)]
    assert "moved" not in kinds and kinds.count("placed") == 1
    assert two.launched() == {app_id: 1} and tags == {app_id: ("1", "1")}
