"""Queues whose apps all need a room their head waits for (``engine.room.shut_out``): read
through once, and again only when an app that needs none of that room comes in."""

from sessionsched.engine import PriorityChanged, Submitted, admission
from tests.engine.engine_builders import Run, app, launched, leaf, tree


def _read(monkeypatch) -> list[str]:
    """The apps admission asks the rooms of, from now on."""
    asked: list[str] = []
    rooms_needed = admission.rooms_needed
    monkeypatch.setattr(admission, "rooms_needed",
                        lambda spec: asked.append(spec.app_id) or rooms_needed(spec))
    return asked


def test_a_queue_read_through_is_read_again_only_for_an_app_that_needs_none_of_the_room(
        monkeypatch):
    run = Run(tree(leaf("a", admission="none")), slots=10, cores=4)
    assert launched(run.submit(app("a1").queue("a").in_cluster(4))) == ["a1"]
    # a2 waits for the cluster's room, and a3 and a4 behind it need it too
    run.submit(app("a2").queue("a").in_cluster(2), app("a3").queue("a"), app("a4").queue("a"),
               at=1.0)
    assert run.sched.waiting["root.a"].code == "driver_room"
    asked = _read(monkeypatch)
    run.step(at=2.0)
    assert asked == []
    run.step(PriorityChanged("a4", 1), at=3.0)  # a new place, and it needs the room too
    assert asked == []
    # one that needs no room of the cluster (no executor, its driver on the host) starts
    out = run.step(Submitted(app("a5").queue("a").max(0).spec()), at=5.0)
    assert launched(out) == ["a5"]
    assert run.sched.waiting["root.a"].code == "driver_room"


def test_a_queue_whose_apps_all_need_the_cluster_room_is_not_read_even_once(monkeypatch):
    """Its books count the queued apps that need no cluster room: with none, a head waiting
    for that room holds back the rest without one of them being read; one such app coming in
    is found and started past the head."""
    run = Run(tree(leaf("a", admission="none")), slots=10, cores=4)
    assert launched(run.submit(app("a1").queue("a").in_cluster(4))) == ["a1"]
    asked = _read(monkeypatch)
    run.submit(app("a2").queue("a").in_cluster(2), app("a3").queue("a"), app("a4").queue("a"),
               at=1.0)
    assert run.sched.waiting["root.a"].code == "driver_room"
    assert asked == []
    out = run.step(Submitted(app("a5").queue("a").max(0).spec()), at=2.0)
    assert launched(out) == ["a5"] and "a5" in asked
