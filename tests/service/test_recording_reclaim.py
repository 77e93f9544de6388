"""Executors taken back are in the app's events (a ``reclaim`` row): its timeline shows them."""

from sessionsched.engine.events import Reclaim
from sessionsched.model import ReclaimMode
from sessionsched.service.recording import record_step


def test_a_reclaim_is_recorded_as_an_event_saying_how_many_how_and_which():
    decisions = [Reclaim("app-1", ("3", "4"), ReclaimMode.DECOMMISSION, 130.0),
                 Reclaim("app-2", ("7",), ReclaimMode.KILL, 100.0)]
    rows = record_step(100.0, [], decisions, {}, {}).rows
    assert [(r.app_id, r.kind) for r in rows] == [("app-1", "reclaim"), ("app-2", "reclaim")]
    assert rows[0].detail == ("2 executors taken back (decommissioned, killed at the deadline "
                              "if still there): 3, 4")
    assert rows[1].detail == "1 executor taken back (killed now): 7"
    assert record_step(100.0, [], decisions, {}, {}).changes == {}  # no column changes
