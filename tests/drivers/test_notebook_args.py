"""``sessionsched.session(...)`` (drivers/notebook.py) given bad arguments, against a scheduler
whose cluster cannot be reached (a session queues and stays): each is a Python exception of
one line naming the argument, raised at once, and nothing is left on the scheduler -- no
session submitted, then withdrawn (killed)."""

from __future__ import annotations

import threading
import uuid

import pytest

pytest.importorskip("pyspark")

from sessionsched.backends.ports import free_port  # noqa: E402
from sessionsched.client import SchedulerClient  # noqa: E402
from sessionsched.drivers.notebook import SessionError, session  # noqa: E402

BOUND_S = 20.0  # a call that has not returned by then hangs (it waits for an admission)
CLOSED = free_port()  # nothing listens there


def outcome(**kwargs) -> BaseException | None:
    """What ``session`` raised (None: it returned), in a thread so that a hang is seen."""
    got: list[BaseException | None] = []

    def run() -> None:
        try:
            session(**kwargs)
            got.append(None)
        except BaseException as e:  # noqa: BLE001 - the outcome is what is checked
            got.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND_S)
    assert got, f"session({kwargs}) did not return within {BOUND_S:g}s"
    return got[0]


# each was sent to the scheduler first: a NaN wait never ran out (the session queued for good),
# a negative one withdrew it at once, and a wait or conf of the wrong type raised from inside
# (TypeError on '>', AttributeError on .items()), the session submitted and killed
BAD = {
    "a NaN wait": ({"wait_s": float("nan")}, ValueError,
                   "wait_s: expected a number of seconds >= 0, not nan"),
    "a negative wait": ({"wait_s": -5}, ValueError,
                        "wait_s: expected a number of seconds >= 0, not -5"),
    "a wait as text": ({"wait_s": "60"}, TypeError,
                       "wait_s: expected a number of seconds, not str '60'"),
    "no wait": ({"wait_s": None}, TypeError,
                "wait_s: expected a number of seconds, not NoneType None"),
    "conf as pairs": ({"conf": [("spark.executor.cores", "2")]}, TypeError,
                      "conf: expected a mapping of Spark properties (a dict), not list"),
    "conf as text": ({"conf": "spark.executor.cores=2"}, TypeError,
                     "conf: expected a mapping of Spark properties (a dict), not str"),
    "a property without a value": ({"conf": {"spark.executor.memory": None}}, TypeError,
                                   "conf: spark.executor.memory must be a string or a number, "
                                   "not NoneType None"),
    "a property name not text": ({"conf": {1: "x"}}, TypeError,
                                 "conf: a property name must be a string, not int 1"),
    "a server not a URL string": ({"server": 6066}, TypeError,
                                  "server: expected a URL such as http://host:6066, not int 6066"),
}


@pytest.mark.parametrize("kwargs,kind,message", BAD.values(), ids=BAD.keys())
def test_a_bad_argument_is_refused_before_anything_is_submitted(shared_offline_server, kwargs,
                                                                kind, message):
    name = f"nb-{uuid.uuid4().hex[:8]}"
    args = {"app_name": name, "server": shared_offline_server.url, "progress": False,
            "wait_s": 2.0, **kwargs}
    e = outcome(**args)
    assert (type(e), str(e)) == (kind, message)
    with SchedulerClient(shared_offline_server.url) as c:
        assert [a.id for a in c.apps() if a.name == name] == []


# the scheduler's refusals, and a server that is no scheduler: SessionError in one line
REFUSED = {
    "a priority out of range": ({"priority": 20000}, "the scheduler refused the session: "
                                "priority 20000 is outside 1..10000"),
    "a queue that does not exist": ({"queue": "root.nope"}, "the scheduler refused the "
                                    "session: unknown queue 'root.nope'; known queues: "),
    "a property Spark cannot read": ({"conf": {"spark.executor.memory": "lots"}},
                                     "the scheduler refused the session: spark.executor.memory="
                                     "'lots' (from conf): expected a size like 512m or 2g"),
    # was "the scheduler refused the session: cannot reach ...": no scheduler answered
    "no server there": ({"server": f"http://127.0.0.1:{CLOSED}"},
                        f"cannot reach the scheduler at http://127.0.0.1:{CLOSED} "
                        "(connection refused)"),
    "not a server URL": ({"server": "ftp://127.0.0.1:21"},
                         "ftp://127.0.0.1:21 is not a valid server URL: "),
}


@pytest.mark.parametrize("kwargs,message", REFUSED.values(), ids=REFUSED.keys())
def test_what_the_scheduler_refuses_is_a_session_error(shared_offline_server, kwargs, message):
    name = f"nb-{uuid.uuid4().hex[:8]}"
    args = {"app_name": name, "server": shared_offline_server.url, "progress": False,
            "wait_s": 2.0, **kwargs}
    e = outcome(**args)
    assert type(e) is SessionError and str(e).startswith(message), e
    assert "\n" not in str(e)
    with SchedulerClient(shared_offline_server.url) as c:
        assert [a.id for a in c.apps() if a.name == name] == []


def test_conf_values_are_written_as_spark_reads_them():
    """A bool is Spark's true/false (str() gave Python's "False"), a number its digits."""
    from sessionsched.drivers.notebook import _conf

    assert _conf({"spark.sql.adaptive.enabled": False, "spark.executor.cores": 2,
                  "spark.memory.fraction": 0.5, "spark.app.name": "x"}) == {
        "spark.sql.adaptive.enabled": "false", "spark.executor.cores": "2",
        "spark.memory.fraction": "0.5", "spark.app.name": "x"}
    assert _conf(None) == {}


@pytest.mark.parametrize("code", ["1", 1.0, None, True], ids=["text", "float", "none", "bool"])
def test_a_stop_with_an_exit_code_not_whole_stops_nothing(shared_offline_server, code):
    """Was: Spark stopped, then the scheduler's 422 only logged -- the session left open on
    the scheduler until its timeout."""
    from sessionsched.drivers.notebook import Session

    client = SchedulerClient(shared_offline_server.url)
    app_id = client._json("POST", "/api/v1/sessions", json={"name": "nb-stop"})["id"]
    handle = Session(client, app_id, shared_offline_server.url, None)
    with pytest.raises(TypeError, match="^exit_code: expected a whole number, not "):
        handle.stop(code)
    assert not handle.ended
    handle.stop(0)
    with SchedulerClient(shared_offline_server.url) as c:
        assert c.app(app_id).state.terminal
