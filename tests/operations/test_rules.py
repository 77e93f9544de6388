"""Who may do what, asked of the port (with tokens on): every door's rules, one table per
question, each refusal naming its rule. The doors' tests check only how a refusal is said
(a 401/403 ``detail``, an ``ErrorResponse``, a Livy ``msg``)."""

from __future__ import annotations

import pytest

from sessionsched.config import tokens_file as tokens
from sessionsched.operations.outcomes import Kind

ON = {}  # auth mode tokens, the defaults of the auth section

# --- who is asking ------------------------------------------------------------------------------

IDENTIFY = {
    "no token, anonymous refused": (None, None, ON, Kind.UNAUTHORIZED,
                                    "a token is required: send 'Authorization: Bearer TOKEN' "
                                    "(sessionsched --token, $SESSIONSCHED_TOKEN)"),
    "a guessed token": ("ss_guessed", None, ON, Kind.UNAUTHORIZED, "unknown or revoked token"),
    "a user's token": ("alice", None, ON, Kind.DONE, "User alice"),
    "an admin's token": ("root", None, ON, Kind.DONE, "Admin root"),
    "no token, anonymous taken as a user": (None, None, {"anonymous": "guest"}, Kind.DONE,
                                            "User guest"),
    "a wrong token is never anonymous": ("ss_wrong", None, {"anonymous": "guest"},
                                         Kind.UNAUTHORIZED, "unknown or revoked token"),
    "Basic auth naming the token's user": ("alice", "alice", ON, Kind.DONE, "User alice"),
    "Basic auth naming another user": ("alice", "bob", ON, Kind.UNAUTHORIZED,
                                       "Basic auth user 'bob' is not the token's user (alice)"),
}


@pytest.mark.parametrize("token,claimed,auth,kind,said", IDENTIFY.values(), ids=IDENTIFY.keys())
def test_identify(port, token, claimed, auth, kind, said):
    with port(auth=auth) as p:
        out = p.ops.identify(p.made.get(token, token), claimed_user=claimed)
        assert out.kind is kind
        assert (out.value.actor if out.ok else out.message) == said


def test_a_revoked_token_is_refused_at_the_next_request(port, tmp_path):
    with port(auth=ON) as p:
        assert p.ops.identify(p.made["bob"]).ok
        assert tokens.revoke(tmp_path / "tokens.json", user="bob") == 1
        out = p.ops.identify(p.made["bob"])
        assert (out.kind, out.message) == (Kind.UNAUTHORIZED, "unknown or revoked token")


def test_agent_secrets_name_their_app_and_a_forged_one_is_refused(port):
    with port(auth=ON) as p:
        a = p.submitted("alice")
        secret = p.ops.gate.secret_for(a)
        assert p.ops.identify(secret).value.actor == f"Agent of {a}"
        out = p.ops.identify(secret[:-4] + "0000")
        assert (out.kind, out.message) == (Kind.UNAUTHORIZED, "invalid agent secret")


def test_auth_off_everyone_is_the_admin(port):
    with port() as p:
        caller = p.ops.identify("anything").value
        assert (caller.role, caller.actor) == ("admin", "Admin")
        assert p.ops.may_change(caller, p.submitted(), "kill").ok


# --- changes to an app: its owner's or an admin's ------------------------------------------------

CHANGE = {
    "the owner kills": ("alice", "kill", True, None),
    "another user kills": ("bob", "kill", False,
                           "user bob may kill only their own apps; {app} is alice's"),
    "another user re-prioritises": ("bob", "priority", False,
                                    "user bob may re-prioritise only their own apps; {app} is "
                                    "alice's"),
    "another user stops": ("bob", "stop", False,
                           "user bob may stop only their own apps; {app} is alice's"),
    "another user reads the log": ("bob", "log", False,
                                   "user bob may read logs of only their own apps; {app} is "
                                   "alice's"),
    "an admin kills": ("root", "kill", True, None),
    "the app's agent kills": ("agent", "kill", False,
                              "user agent:{app} may kill only their own apps; {app} is alice's"),
}


@pytest.mark.parametrize("who,what,allowed,rule", CHANGE.values(), ids=CHANGE.keys())
def test_who_may_change_an_app(port, who, what, allowed, rule):
    with port(auth=ON) as p:
        app = p.submitted("alice")
        caller = p.agent(app) if who == "agent" else p.caller(who)
        out = {
            "kill": lambda: p.run(p.ops.kill(caller, app)),
            "priority": lambda: p.run(p.ops.set_priority(caller, app, 10, "test:1", "test")),
            "stop": lambda: p.run(p.ops.stop_session(caller, app, 0)),
            "log": lambda: p.ops.log_tail(caller, app, 10),
        }[what]()
        if allowed:
            assert out.ok, out
        else:
            assert (out.kind, out.message) == (Kind.FORBIDDEN, rule.format(app=app))
            after = p.ops.app(app)  # refused: nothing changed
            assert (after.state.terminal, after.priority) == (False, 5000)


def test_a_sessions_own_agent_may_stop_it(port):
    with port(auth=ON) as p:
        sid = p.run(p.ops.submit_session(p.caller("alice"), "test:1", "nb", None, None, {}))
        out = p.run(p.ops.stop_session(p.agent(sid.value.id), sid.value.id, 0))
        assert out.ok and out.value.state.terminal  # queued still: ended as KILLED


def test_an_unknown_app_is_not_found_before_any_rule(port):
    with port(auth=ON) as p:
        out = p.ops.may_change(p.caller("bob"), "driver-nope", "kill")
        assert (out.kind, out.message) == (Kind.NOT_FOUND, "no app 'driver-nope'")


# --- priorities: the caller's range --------------------------------------------------------------

RANGES = {
    "a user within 1-5000": ("alice", 4000, {}, True, None),
    "a user above it": ("alice", 9000, {}, False, "user alice may set priority 1-5000, not 9000"),
    "an admin to 10000": ("root", 10000, {}, True, None),
    "a configured user range": ("bob", 4000, {"user_priorities": {"min": 1, "max": 3000}},
                                False, "user bob may set priority 1-3000, not 4000"),
}


@pytest.mark.parametrize("who,priority,auth,allowed,rule", RANGES.values(), ids=RANGES.keys())
def test_priority_ranges_on_submit_and_on_change(port, who, priority, auth, allowed, rule):
    with port(auth=auth) as p:
        submitted = p.submit(who, priority=priority)
        app = p.submitted(who)
        changed = p.run(p.ops.set_priority(p.caller(who), app, priority, "test:1", "test"))
        for out in (submitted, changed):
            if allowed:
                assert out.ok, out
            else:
                assert (out.kind, out.message) == (Kind.FORBIDDEN, rule)
        if allowed:
            assert changed.value.priority == priority


def test_the_default_priority_is_allowed_whatever_the_range(port):
    with port(auth={"user_priorities": {"min": 1, "max": 3000}}) as p:
        assert p.submit("bob").value.priority == 5000  # defaults.priority


# --- who may submit into a queue: users and groups (was tests/config/test_groups.py) -------------

GROUPS = {"etl": ["alice"], "analysts": ["carol"]}
GROUP_QUEUES = [{"name": "root", "queues": [
    {"name": "default"},
    {"name": "etl", "submit_groups": ["etl"], "submit_users": ["bob"]},
    {"name": "lab", "submit_groups": ["analysts"], "queues": [
        {"name": "small"},  # sets neither list: its parent's apply
        {"name": "open", "submit_users": ["dave"], "submit_groups": ["etl", "analysts"]},
    ]},
]}]

WHO_MAY_SUBMIT = {
    "a group member": ("alice", "etl", None),
    "a listed user beside the groups": ("bob", "etl", None),
    "in no group and not listed": (
        "carol", "etl",
        "user carol may not submit to queue root.etl (submit_users: bob; submit_groups: etl)"),
    "a parent's group applies below it": ("carol", "lab.small", None),
    "a parent's group only": (
        "alice", "lab.small",
        "user alice may not submit to queue root.lab.small (submit_groups: analysts)"),
    "the child's own lists": ("alice", "lab.open", None),
    "no lists: everyone": ("dave", "default", None),
    "an admin anywhere": ("root", "lab.small", None),
}


@pytest.mark.parametrize("who,queue,rule", WHO_MAY_SUBMIT.values(), ids=WHO_MAY_SUBMIT.keys())
def test_who_may_submit(port, who, queue, rule):
    with port(auth={"groups": GROUPS}, queues=GROUP_QUEUES) as p:
        out = p.submit(who, queue=queue)
        if rule is None:
            assert out.ok, out
        else:
            assert (out.kind, out.message) == (Kind.FORBIDDEN, rule)
            assert p.ops.apps() == []  # refused: nothing stored


def test_a_queues_submit_users_alone(port):
    queues = [{"name": "root", "queues": [{"name": "default"},
                                          {"name": "etl", "submit_users": ["bob"]}]}]
    with port(auth=ON, queues=queues) as p:
        out = p.submit("alice", queue="etl")
        assert (out.kind, out.message) == (
            Kind.FORBIDDEN, "user alice may not submit to queue root.etl (submit_users: bob)")
        assert p.submit("bob", queue="etl").ok


def test_the_submitter_is_the_caller_whatever_the_properties_say(port):
    with port(auth=ON) as p:
        out = p.submit("alice", conf={"spark.sessionsched.user": "root"})
        assert (out.value.user, out.value.spec.user) == ("alice", "alice")


# --- agents report; they do not submit or steer -------------------------------------------------


def test_an_agent_secret_reports_for_its_own_app_only(port):
    with port(auth=ON) as p:
        a, b = p.submitted("alice"), p.submitted("alice")
        agent = p.agent(a)
        out = p.ops.heartbeat(agent, b, 100, [], None)
        assert (out.kind, out.message) == (
            Kind.FORBIDDEN, f"this agent secret is for {a}; it may not report for {b}")
        assert p.ops.heartbeat(agent, a, 1, [], None).ok
        out = p.ops.heartbeat(p.caller("bob"), a, 1, [], None)
        assert (out.kind, out.message) == (
            Kind.FORBIDDEN, f"user bob may report only for their own apps; {a} is alice's")
        assert p.ops.heartbeat(p.caller("alice"), a, 1, [], None).ok  # a notebook's agent
        assert p.ops.heartbeat(agent, "driver-nope", 1, [], None).kind is Kind.NOT_FOUND
        for refused in (p.submit(caller=agent), p.submit(caller=agent, uploads={}),
                        p.run(p.ops.submit_session(agent, "t", None, None, None, {})),
                        p.ops.as_client(agent), p.ops.uploaded(agent, "0" * 64)):
            assert (refused.kind, refused.message) == (
                Kind.FORBIDDEN, "an agent secret may only report for its own app")


def test_a_repl_speaks_for_its_own_session_only(port):
    with port(auth=ON) as p:
        a, b = p.submitted("alice"), p.submitted("alice")
        assert p.ops.may_speak_for(p.agent(a), a, "only a's").ok
        assert p.ops.may_speak_for(p.caller("root"), a, "only a's").ok
        for caller in (p.agent(b), p.caller("alice")):
            out = p.ops.may_speak_for(caller, a, "only a's REPL")
            assert (out.kind, out.message) == (Kind.FORBIDDEN, "only a's REPL")


def test_the_audit_trail_is_the_admins(port):
    with port(auth=ON) as p:
        app = p.submitted("alice")
        out = p.ops.audit(p.caller("alice"), None, None, None)
        assert (out.kind, out.message) == (
            Kind.FORBIDDEN, "user alice may not read the audit trail (admins only)")
        rows = p.ops.audit(p.caller("root"), app, None, None).value
        assert [(r.kind, r.who) for r in rows] == [("submitted", "alice")]
