"""``intake.depth.DepthCaps``, the queue depth caps the port applies to every submission, on
plain data: what the service counts as queued plus the places handed out and not given back,
against ``max_queued_apps`` and ``max_queued_apps_per_user``. (Through every door:
tests/service/test_queue_limits.py.)"""

from __future__ import annotations

import pytest

from sessionsched.intake.depth import DepthCaps
from sessionsched.intake.guard import Refused
from sessionsched.model import Queue

# name: (caps, queued as the service counts them (total, alice's), places alice holds in
#        flight, bob's, the refusal's message for one more of alice's or None)
CASES = {
    "no caps: never counted": ({}, (10**6, 10**6), 0, 0, None),
    "under the cap": ({"max_queued_apps": 3}, (2, 0), 0, 0, None),
    "at the cap": ({"max_queued_apps": 3}, (3, 0), 0, 0,
                   "queue root.q already holds 3 queued app(s), its max_queued_apps is 3"),
    "places in flight count": ({"max_queued_apps": 3}, (1, 0), 1, 1,
                               "queue root.q already holds 3 queued app(s)"),
    "per user: another user's do not count": (
        {"max_queued_apps_per_user": 2}, (5, 1), 0, 2, None),
    "per user: at the cap": ({"max_queued_apps_per_user": 2}, (5, 2), 0, 0,
                             "user alice already has 2 app(s) queued in root.q, its "
                             "max_queued_apps_per_user is 2"),
    "per user: in flight counts": ({"max_queued_apps_per_user": 2}, (1, 1), 1, 0,
                                   "user alice already has 2 app(s) queued in root.q"),
    "both: the queue's cap first": ({"max_queued_apps": 2, "max_queued_apps_per_user": 1},
                                    (2, 1), 0, 0, "its max_queued_apps is 2"),
}


@pytest.mark.parametrize("caps, queued, alice, bob, refusal", CASES.values(), ids=CASES.keys())
def test_depth_caps(caps, queued, alice, bob, refusal):
    leaf = Queue("root.q", **caps)
    depth = DepthCaps()
    asked: list[str | None] = []

    def count(user):
        asked.append(user)
        return queued

    for user, n in (("alice", alice), ("bob", bob)):
        for _ in range(n):
            depth.take(Queue("root.q"), user, count)  # no cap: no place taken
            depth.take(leaf, user, lambda _user: (0, 0))
    if refusal is None:
        depth.take(leaf, "alice", count)
    else:
        with pytest.raises(Refused) as err:
            depth.take(leaf, "alice", count)
        assert err.value.status == 429 and refusal in str(err.value)
        assert str(err.value).endswith("; submit again once some have started")
    if caps:  # the count by user is asked for only where a per-user cap needs it
        wanted = "alice" if "max_queued_apps_per_user" in caps else None
        assert asked == [wanted]


def test_a_place_given_back_frees_it_once():
    leaf = Queue("root.q", max_queued_apps=1)
    depth = DepthCaps()
    place = depth.take(leaf, "alice", lambda _user: (0, 0))
    with pytest.raises(Refused):
        depth.take(leaf, "bob", lambda _user: (0, 0))
    place()
    place()  # a second call gives nothing back twice
    assert depth.in_flight() == 0
    depth.take(leaf, "bob", lambda _user: (0, 0))
    assert depth.in_flight() == 1
