"""Launches that fail for a transient reason (the master cannot be reached) are tried again
with back-off before an app is FAILED; a permanent refusal fails at once; a kill ends the
waiting. The service stepped by hand on the memory cluster (``test_cycles``), whose
``launchFailures`` property makes an app's first launches fail as an unreachable master."""

from __future__ import annotations

import pytest
import test_cycles

from sessionsched.backends.memory import LAUNCH_FAILURES, WORK

cluster = test_cycles.cluster  # the stepped service's fixtures
stepped = test_cycles.stepped


def trail(s, app_id: str, kind: str) -> list[str]:
    return [e["detail"] for e in s.client.get(f"/api/v1/apps/{app_id}/events").json()
            if e["kind"] == kind]


@pytest.mark.parametrize("failures, state, retries", [
    (2, "FINISHED", 2),
    (99, "FAILED", 5),
], ids=["two failures: launched at the third attempt", "unreachable for good: FAILED after 6"])
def test_a_launch_failing_for_a_transient_reason_is_tried_again(stepped, cluster, failures,
                                                                 state, retries):
    with stepped(admission="none") as s:
        app_id = s.submit("flaky", **{LAUNCH_FAILURES: str(failures), WORK: "1"})
        s.cycle()
        waiting = s.app(app_id)
        assert waiting["state"] == "STARTING" and app_id not in cluster.apps
        app = s.until(app_id, state, step_s=1.0)
        tried = trail(s, app_id, "retry")
        assert len(tried) == retries
        assert tried[0] == ("launch failed, tried again: the memory cluster's master cannot be "
                            f"reached (launch 1 of {app_id}; {LAUNCH_FAILURES}={failures}); "
                            "attempt 1 of 6, next in 1s")
        if state == "FINISHED":
            assert len(trail(s, app_id, "launch")) == 1  # launched once
            assert app["exit_code"] == 0
        else:
            assert app_id not in cluster.apps
            assert app["reason"] == (f"launch failed: the memory cluster's master cannot be "
                                     f"reached (launch 6 of {app_id}; {LAUNCH_FAILURES}="
                                     f"{failures}) (gave up after 6 attempts)")


def test_a_permanent_refusal_fails_at_once_and_a_kill_ends_the_waiting(stepped, cluster):
    with stepped(admission="none") as s:
        broken = s.submit("broken", **{WORK: "soon"})
        flaky = s.submit("flaky", **{LAUNCH_FAILURES: "99"})
        s.cycle()
        s.cycle()  # the refusal's DriverExited is stepped
        app = s.app(broken)
        assert app["state"] == "FAILED" and app["reason"].startswith("launch failed: ")
        assert trail(s, broken, "retry") == []
        assert s.app(flaky)["state"] == "STARTING"
        s.done(s.service.kill(flaky))
        assert s.app(flaky)["state"] == "KILLED"
        for _ in range(40):
            s.cycle(1.0)  # past every back-off: nothing is tried any more
        assert len(trail(s, flaky, "retry")) == 1 and flaky not in cluster.apps
