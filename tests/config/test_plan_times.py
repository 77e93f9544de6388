"""Time-of-day plans (``config.plan_times``): when each fired last, which one runs, which are
still to fire, every firing over a span (the simulator's), and one line for a bad plan."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from sessionsched.config import ConfigError, PlanConfig, ServerConfig, parse_model
from sessionsched.config import plan_times as plans

SATURDAY_1730 = datetime(2026, 11, 21, 17, 30, tzinfo=timezone.utc)

LAST_FIRE = [
    ("weekdays 08:00 (crontab 1-5 = Mon-Fri)", "0 8 * * 1-5", datetime(2026, 11, 20, 8, 0)),
    ("weekends by number (0 = Sunday)", "0 9 * * 0,6", datetime(2026, 11, 21, 9, 0)),
    ("7 is Sunday too", "0 9 * * 7", datetime(2026, 11, 15, 9, 0)),
    ("by name", "0 18 * * fri", datetime(2026, 11, 20, 18, 0)),
    ("every minute", "* * * * *", datetime(2026, 11, 21, 17, 30)),
    ("first of the month", "0 0 1 * *", datetime(2026, 11, 1, 0, 0)),
]


@pytest.mark.parametrize("cron,expected", [r[1:] for r in LAST_FIRE], ids=[r[0] for r in LAST_FIRE])
def test_last_fire_time(cron, expected):
    plan = PlanConfig(cron=cron, timezone="UTC")
    assert plans.last_fire_time(plan, SATURDAY_1730) == expected.replace(tzinfo=timezone.utc)


def test_the_plan_that_fired_last_is_current_and_overrides_the_config():
    cfg = ServerConfig.model_validate({
        "queues": [{"name": "root", "queues": [{"name": "default"}, {"name": "batch"}]}],
        "plans": [
            {"cron": "0 8 * * 1-5", "timezone": "UTC", "queues": {"default": {"weight": 10}}},
            {"cron": "0 18 * * 1-5", "timezone": "UTC",
             "queues": {"root.batch": {"weight": 10, "policy": "fifo"}}},
        ],
    })
    index = plans.current_plan(cfg.plans, SATURDAY_1730)  # Friday 18:00 fired last
    assert index == 1
    tree = {q.name: q for q in cfg.queue_tree(cfg.plans[index]).walk()}
    assert (tree["root.batch"].weight, tree["root.batch"].policy.value) == (10, "fifo")
    assert tree["root.default"].weight == 1  # plans do not stack
    assert plans.describe(cfg.plans[1]) == (
        "plan '0 18 * * 1-5': root.batch policy=fifo, weight=10.0")


# A one-shot plan (``at``) fires once, to the second; the zone applies to a time without offset.
AT = [
    ("past, in UTC", {"at": "2026-11-21T17:29:58", "timezone": "UTC"},
     datetime(2026, 11, 21, 17, 29, 58, tzinfo=timezone.utc)),
    ("now exactly", {"at": "2026-11-21T17:30:00Z"}, SATURDAY_1730),
    ("two seconds ahead: not yet", {"at": "2026-11-21T17:30:02Z"}, None),
    ("the zone's offset (Paris, UTC+1 in November)",
     {"at": "2026-11-21T18:29:59", "timezone": "Europe/Paris"},
     datetime(2026, 11, 21, 17, 29, 59, tzinfo=timezone.utc)),
    ("an offset given wins over the zone (18:30+01:00 is 17:30 UTC)",
     {"at": "2026-11-21T18:30:00+01:00", "timezone": "UTC"}, SATURDAY_1730),
    ("a date alone is its midnight", {"at": "2026-11-21", "timezone": "UTC"},
     datetime(2026, 11, 21, tzinfo=timezone.utc)),
]


@pytest.mark.parametrize("plan,expected", [r[1:] for r in AT], ids=[r[0] for r in AT])
def test_last_fire_time_of_a_one_shot_plan(plan, expected):
    assert plans.last_fire_time(PlanConfig(**plan), SATURDAY_1730) == expected


def test_a_one_shot_plan_is_current_once_its_second_has_come_and_is_scheduled_only_before():
    cfg = ServerConfig.model_validate({"plans": [
        {"cron": "30 17 * * *", "timezone": "UTC", "queues": {"default": {"weight": 2}}},
        {"at": "2026-11-21T17:30:01Z", "queues": {"default": {"weight": 3}}},
        {"at": "2026-11-21T17:29:59Z", "queues": {"default": {"weight": 4}}},
    ]})
    one_s = timedelta(seconds=1)
    # 17:30:00: the cron's minute fired after the past one-shot (17:29:59), the next is ahead.
    assert plans.current_plan(cfg.plans, SATURDAY_1730) == 0
    assert [i for i, _ in plans.still_to_fire(cfg.plans, SATURDAY_1730)] == [0, 1]
    # 17:30:01: the one-shot's second; from then on it is the plan that fired last.
    assert plans.current_plan(cfg.plans, SATURDAY_1730 + one_s) == 1
    assert [i for i, _ in plans.still_to_fire(cfg.plans, SATURDAY_1730 + one_s)] == [0]
    assert plans.describe(cfg.plans[1]) == (
        "plan 'at 2026-11-21T17:30:01+00:00': default weight=3.0")


@pytest.mark.parametrize("plan,message", [
    ({"cron": "0 8 * *"},
     "plans[0]: cron '0 8 * *': expected 5 fields (minute hour day month day-of-week), got 4"),
    ({"cron": "0 8 * * 9"}, "plans[0]: cron '0 8 * * 9': day of week '9' is not within 0-7"),
    ({"cron": "0 8 * * *", "queues": {"gpu": {"weight": 2}}},
     "plans[0].queues: unknown queue 'gpu'; known queues: root, root.default"),
    ({"cron": "0 8 * * *", "queues": {"default": {"weight": 0}}},
     "plans[0].queues.default.weight: Input should be greater than 0"),
    ({"cron": "0 8 * * *", "queues": {"default": {"colour": "red"}}},
     "plans[0].queues.default.colour: unknown setting"),
    ({"at": 1790000000},
     "plans[0].at: 1790000000 is not a date and time like 2026-12-24T14:00:00 (an offset such "
     "as +01:00 or Z optional)"),
    ({"at": "tomorrow 8:00"},
     "plans[0].at: 'tomorrow 8:00' is not a date and time like 2026-12-24T14:00:00 (an offset "
     "such as +01:00 or Z optional)"),
    ({"queues": {"default": {"weight": 2}}},
     "plans[0]: a plan fires by either `cron` (each matching minute) or `at` (once, a date and "
     "time); give exactly one"),
    ({"cron": "0 8 * * *", "at": "2026-12-24T14:00:00"},
     "plans[0]: a plan fires by either `cron` (each matching minute) or `at` (once, a date and "
     "time); give exactly one"),
    ({"at": "2026-12-24T14:00:00", "timezone": "Mars/Olympus"},
     "plans[0]: at '2026-12-24T14:00:00': 'No time zone found with key Mars/Olympus'"),
    # A null on a setting without an "off" ran the queue with a weight (policy, ...) of None
    # once the plan fired: GET /api/v1/queues answered 500.
    ({"cron": "0 8 * * *", "queues": {"default": {"weight": None}}},
     "plans[0].queues.default.weight: null turns off a limit, and weight is not one: leave it "
     "out to keep the configured value"),
    ({"cron": "0 8 * * *", "queues": {"default": {"policy": None}}},
     "plans[0].queues.default.policy: null turns off a limit, and policy is not one: leave it "
     "out to keep the configured value"),
    ({"cron": "0 8 * * *", "queues": {"default": {"max_cores": 0}}},
     "plans[0].queues.default.max_cores: Input should be greater than or equal to 1"),
], ids=["four-fields", "bad-weekday", "unknown-queue", "zero-weight", "unknown-setting",
        "at-a-number", "at-not-a-time", "neither-cron-nor-at", "both-cron-and-at", "at-bad-zone",
        "null-weight", "null-policy", "zero-max-cores"])
def test_bad_plans_are_config_errors(plan, message):
    with pytest.raises(ConfigError) as err:
        parse_model(ServerConfig, {"plans": [plan]}, "f.yaml")
    assert str(err.value) == f"f.yaml: {message}"


# --- every firing over a span (the simulator runs a config's plans on its own clock) ----------

MONDAY_0800 = datetime(2026, 11, 23, 8, 0, tzinfo=timezone.utc)
H = timedelta(hours=1)
FIRINGS = [
    # name, plans, span from MONDAY_0800 -> (hours after the start, plan index)
    ("a daily cron, twice in two days", [{"cron": "0 9 * * *"}], 48 * H, [(1, 0), (25, 0)]),
    ("the start's own minute is not after it", [{"cron": "0 8 * * *"}], 25 * H, [(24, 0)]),
    ("the end's own minute is in", [{"cron": "0 10 * * *"}], 2 * H, [(2, 0)]),
    ("weekdays only: Monday 09:00 to Tuesday 09:00 (crontab numbering)",
     [{"cron": "0 9 * * 2,3"}], 72 * H, [(25, 0), (49, 0)]),
    ("a one-shot within the span", [{"at": "2026-11-23T12:00:00Z"}], 8 * H, [(4, 0)]),
    ("a one-shot before the start or past the end: never",
     [{"at": "2026-11-23T07:00:00Z"}, {"at": "2026-11-23T20:00:00Z"}], 8 * H, []),
    ("two plans at one time: the later in the list last (it is the one that runs)",
     [{"cron": "0 9 * * *"}, {"at": "2026-11-23T09:00:00Z"}, {"cron": "0 9 * * *"}], 2 * H,
     [(1, 0), (1, 1), (1, 2)]),
    ("in time order across plans", [{"cron": "0 18 * * *"}, {"cron": "0 9 * * *"}], 30 * H,
     [(1, 1), (10, 0), (25, 1)]),
]


@pytest.mark.parametrize("given,span,expected", [r[1:] for r in FIRINGS],
                         ids=[r[0] for r in FIRINGS])
def test_firings(given, span, expected):
    cfg = ServerConfig.model_validate({"plans": [{"timezone": "UTC", **p} for p in given]})
    got = plans.firings(cfg.plans, MONDAY_0800, MONDAY_0800 + span)
    assert [((at - MONDAY_0800) / H, i) for at, i in got] == expected


def test_firings_from_between_two_seconds_keep_the_next_whole_one():
    """A run's 0 from an event log's first app has milliseconds (08:59:59.500): the 09:00
    firing half a second later is the run's, not skipped for the next day's."""
    cfg = ServerConfig.model_validate({"plans": [{"cron": "0 9 * * *", "timezone": "UTC"}]})
    start = MONDAY_0800 + timedelta(minutes=59, seconds=59.5)
    assert plans.firings(cfg.plans, start, start + 2 * H) == [(MONDAY_0800 + H, 0)]
    assert plans.next_change(cfg.plans, start, None) == (MONDAY_0800 + H, 0)


def test_firings_past_reason_are_refused_with_the_span():
    cfg = ServerConfig.model_validate({"plans": [{"cron": "* * * * *", "timezone": "UTC"}]})
    with pytest.raises(ValueError, match=r"^the plans fire more than 100 times between "
                       r"2026-11-23T08:00:00\+00:00 and 2026-11-23T10:00:00\+00:00$"):
        plans.firings(cfg.plans, MONDAY_0800, MONDAY_0800 + 2 * H, most=100)
    assert len(plans.firings(cfg.plans, MONDAY_0800, MONDAY_0800 + 2 * H)) == 120


def test_firings_end_with_the_calendar():
    cfg = ServerConfig.model_validate({"plans": [{"cron": "0 0 1 1 *", "timezone": "UTC"}]})
    start = datetime(9990, 6, 1, tzinfo=timezone.utc)
    got = plans.firings(cfg.plans, start, datetime.max.replace(tzinfo=timezone.utc))
    assert [at.year for at, _ in got] == list(range(9991, 10000))


# --- the next change (health's next_plan) ---------------------------------------------------

NEXT = [
    # name, plans, the plan in force -> (hours after MONDAY_0800, plan index) or None
    ("the other plan's next firing", [{"cron": "0 9 * * *"}, {"cron": "0 18 * * *"}], 0,
     (10, 1)),
    ("the plan in force firing again changes nothing: skipped",
     [{"cron": "0 * * * *"}, {"cron": "0 18 * * *"}], 0, (10, 1)),
    ("none in force yet: the first to fire", [{"cron": "0 18 * * *"}, {"cron": "0 12 * * *"}],
     None, (4, 1)),
    ("a one-shot past is never next", [{"at": "2026-11-23T07:00:00Z"}, {"cron": "0 9 * * *"}],
     1, None),
    ("at one time the later plan runs: the one in force, later in the list, wins again",
     [{"cron": "0 9 * * *"}, {"cron": "0 9 * * 1"}, {"cron": "0 12 * * *"}], 1, (4, 2)),
    ("no other plan: none", [{"cron": "0 9 * * *"}], 0, None),
    ("a plan in force every minute does not hide one days ahead",
     [{"cron": "* * * * *"}, {"at": "2026-11-26T08:00:00Z"}], 0, (72, 1)),
    ("a tie the other plan wins is a change", [{"cron": "0 9 * * *"}, {"cron": "0 9 * * 1"}],
     0, (1, 1)),
]


@pytest.mark.parametrize("given,current,expected", [r[1:] for r in NEXT],
                         ids=[r[0] for r in NEXT])
def test_next_change(given, current, expected):
    cfg = ServerConfig.model_validate({"plans": [{"timezone": "UTC", **p} for p in given]})
    got = plans.next_change(cfg.plans, MONDAY_0800, current)
    assert (None if got is None else ((got[0] - MONDAY_0800) / H, got[1])) == expected
