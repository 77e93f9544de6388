"""What an operation ends in, whichever door asked: the one wait (``outcomes.waited``) and the
port's operations done, not found, conflicting, overloaded or unavailable."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future

import pytest

from sessionsched.operations import port as port_module
from sessionsched.operations.outcomes import Kind, waited
from sessionsched.service.reads import NotFound
from sessionsched.service.service import Conflict
from sessionsched.store import StoreUnavailable


def _resolved(result=None, error: BaseException | None = None) -> Future:
    f: Future = Future()
    if error is not None:
        f.set_exception(error)
    elif result is not None:
        f.set_result(result)
    return f  # neither: never resolved


WAITED = {
    "a result": (_resolved, {"result": "stored"}, Kind.DONE, ""),
    "an unknown app": (_resolved, {"error": NotFound("no app 'x'")}, Kind.NOT_FOUND,
                       "no app 'x'"),
    "an ended app": (_resolved, {"error": Conflict("x has already ended (KILLED)")},
                     Kind.CONFLICT, "x has already ended (KILLED)"),
    "the store unreachable": (_resolved, {"error": StoreUnavailable("store down")},
                              Kind.UNAVAILABLE, "state store unavailable: store down"),
    "any other failure: not stored": (_resolved, {"error": OSError("disk\nfull")},
                                      Kind.UNAVAILABLE, "disk\\nfull"),
    "no answer in time": (_resolved, {}, Kind.OVERLOADED,
                          "kill not confirmed within 0.05s; the scheduler is overloaded, "
                          "try again"),
}


@pytest.mark.parametrize("make,args,kind,message", WAITED.values(), ids=WAITED.keys())
def test_waited(make, args, kind, message):
    out = asyncio.run(waited(make(**args), 0.05, "kill"))
    assert (out.kind, out.message) == (kind, message)
    assert out.value == ("stored" if kind is Kind.DONE else None)


def test_a_submission_is_done_once_committed_and_read_back(port):
    with port() as p:
        out = p.submit(name="etl", priority=7000)
        stored = out.value
        assert out.ok and stored.id.startswith("driver-") and stored.seq == 1
        assert (p.ops.app(stored.id).name, p.ops.app(stored.id).priority) == ("etl", 7000)


def test_a_kill_is_done_after_the_cycle_that_applies_it(port):
    with port() as p:
        app = p.submitted()
        out = p.run(p.ops.kill(p.caller(None), app, actor="Admin from test"))
        assert out.ok and out.value.state.value == "KILLED"
        again = p.run(p.ops.kill(p.caller(None), app))
        assert (again.kind, again.message) == (Kind.CONFLICT, f"{app} has already ended (KILLED)")
        changed = p.run(p.ops.set_priority(p.caller(None), app, 10, "t", "t"))
        assert changed.kind is Kind.CONFLICT


def test_unknown_apps_are_not_found_by_every_operation(port):
    with port() as p:
        nobody = p.caller(None)
        for out in (p.run(p.ops.kill(nobody, "driver-x")),
                    p.run(p.ops.set_priority(nobody, "driver-x", 1, "t", "t")),
                    p.run(p.ops.stop_session(nobody, "driver-x", 0)),
                    p.ops.events("driver-x"), p.ops.log_tail(nobody, "driver-x", 5),
                    p.ops.heartbeat(nobody, "driver-x", 1, [], None)):
            assert out.kind is Kind.NOT_FOUND, out
            assert "driver-x" in out.message


def test_stopping_what_is_not_a_session_is_a_conflict(port):
    with port() as p:
        app = p.submitted()
        out = p.run(p.ops.stop_session(p.caller(None), app, 0))
        assert (out.kind, out.message) == (
            Kind.CONFLICT, f"{app} is not a notebook session (kind submit)")


def test_no_cycle_within_the_wait_is_overloaded_and_the_change_still_lands(port, monkeypatch):
    monkeypatch.setattr(port_module, "CYCLE_WAIT_S", 0.05)
    with port() as p:
        app = p.submitted()
        out = p.run(p.ops.set_priority(p.caller(None), app, 9000, "t", "t"), cycles=False)
        assert (out.kind, out.message) == (
            Kind.OVERLOADED, "priority change not confirmed within 0.05s; the scheduler is "
                             "overloaded, try again")
        p.cycle()
        p.cycle()
        assert p.ops.app(app).priority == 9000  # committed: the next cycle applies it
        out = p.run(p.ops.kill(p.caller(None), app), cycles=False)
        assert out.kind is Kind.OVERLOADED
        p.cycle()
        assert p.ops.app(app).state.value == "KILLED"


def test_a_submission_the_store_cannot_take_is_unavailable(port, monkeypatch):
    with port() as p:
        monkeypatch.setattr(p.service, "submit", lambda app, sender: _resolved(
            error=StoreUnavailable("the store is unreachable")))
        out = p.submit()
        assert (out.kind, out.message) == (
            Kind.UNAVAILABLE, "state store unavailable: the store is unreachable")


def test_a_request_kill_is_asked_without_waiting(port):
    with port() as p:
        app = p.submitted()
        asked = p.ops.request_kill(p.caller(None), app, actor="Livy (idle)")
        assert asked.ok and not asked.value.done()
        p.cycle()
        p.cycle()
        assert p.ops.app(app).state.value == "KILLED"
        assert p.ops.request_kill(p.caller(None), app).kind is Kind.CONFLICT
