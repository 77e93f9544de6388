"""One app's facts (``events.AppFacts``) -> its entry in a simulator workload
(docs/operator/simulator.md), with the notes that say where a value came from.

- Queue and priority: ``spark.sessionsched.queue`` / ``spark.ego.priority`` as the app set
  them; else the first mapping rule (``Rule``: by user or by app name, a shell-style pattern)
  that matches; else the server config's defaults (``Defaults``); else the workload's.
- Submit time: its submission as sessionsched stamped it (``spark.sessionsched.submitTime``,
  ``submit_ms``), relative to the first app's; for an app sessionsched did not launch, its
  start (``SparkListenerApplicationStart``): a Spark log holds no submission, so for an app
  that waited in a queue the start stands in for it (its entry says so in a note; one
  sessionsched launched in cluster mode names its sessionsched app id,
  ``spark.sessionsched.appId``, whose submission the server's store has).
- Sizes as Spark reads them: ``spark.driver.{cores,memory}``, ``spark.submit.deployMode``
  (cluster: a driver in the cluster), ``spark.executor.{cores,memory}`` (cores unset: what
  its executors had); dynamic allocation's ``min``/``maxExecutors``, or for a static app
  ``spark.executor.instances`` (unset: the most executors it held at once) for both;
  ``spark.ego.slots.max``.
- ``startup_s``: from the app's start to its first stage (the driver's work before it asked
  for executors); a stage's ``gap_s``: from the end of the stages submitted before it to its
  submission (the app's own driver-side work between two Spark jobs; 0 when it was submitted
  while one still ran); ``tail_s``: from its last stage's end to the application's end
  (``spark.stop()`` and the app's own work after its last job).
- Stages: in the order Spark submitted them, each with its Spark stage ``id``, task count,
  mean task time, the task times' deciles (``task_s_quantiles``, when they differ; as many
  evenly spaced quantiles as it had tasks when it had fewer than 11) and
  ``after``: the stages it read from that ran (a skipped stage's output was reused).
- ``conf``: the app's resource properties (``spark.{driver,executor,task}.resource.*``,
  ``spark.task.cpus``), with dynamic allocation its two backlog timeouts (Spark's defaults
  where it set none: the simulated app ramps its requests up as Spark did), and gang
  properties (``spark.sessionsched.gang.*`` and YuniKorn's driver annotations), which ride on
  the simulated launch; a gang that does not parse is left out, with a note.
"""

from __future__ import annotations

import fnmatch
import re
import statistics
from dataclasses import dataclass

from ..model import PRIORITY_DEFAULT, parse_mem_mib, parse_priority
from ..spark.allocation import (
    BACKLOG,
    SPARK_BACKLOG_S,
    SUSTAINED_BACKLOG,
    backlog_timeouts,
    dynamic_allocation,
)
from ..spark.gang_properties import gang_from_conf
from .events import AppFacts, FirstTask, StageFacts

QUEUE_KEY = "spark.sessionsched.queue"
PRIORITY_KEY = "spark.ego.priority"
GANG_PREFIXES = ("spark.sessionsched.gang.",
                 "spark.kubernetes.driver.annotation.yunikorn.apache.org/")
RESOURCE_PREFIXES = ("spark.driver.resource.", "spark.executor.resource.",
                     "spark.task.resource.")
LAUNCH_MARKER = "spark.sessionsched.appId"  # set on the apps sessionsched launched in cluster mode
SUBMIT_TIME = "spark.sessionsched.submitTime"  # stamped by every sessionsched launch (epoch ms)
INT_MAX = 2**31 - 1  # Spark's maxExecutors default: no cap


@dataclass(frozen=True)
class Rule:
    """``KIND:PATTERN=VALUE``: apps whose ``KIND`` (``user`` or ``name``) matches PATTERN
    (shell-style: ``etl-*``) get VALUE."""

    kind: str
    pattern: str
    value: str

    def matches(self, facts: AppFacts) -> bool:
        subject = facts.user if self.kind == "user" else facts.name
        return fnmatch.fnmatchcase(subject, self.pattern)


def parse_rule(text: str) -> Rule:
    kind, colon, rest = text.partition(":")
    pattern, eq, value = rest.rpartition("=")
    if not colon or not eq or kind not in ("user", "name") or not pattern or not value.strip():
        raise ValueError(f"{text!r}: expected user:PATTERN=VALUE or name:PATTERN=VALUE")
    return Rule(kind, pattern, value.strip())


@dataclass(frozen=True)
class Defaults:
    queue: str | None = None  # None: the workload's default (its only leaf, else root.default)
    priority: int = PRIORITY_DEFAULT


@dataclass(frozen=True)
class Entry:
    app: dict  # the workload's app entry, as YAML will hold it
    notes: tuple[str, ...]  # where values came from, for a comment above it


def _first(rules: tuple[Rule, ...], facts: AppFacts) -> Rule | None:
    return next((r for r in rules if r.matches(facts)), None)


def _size(props: dict, key: str, default: str, notes: list[str]) -> int:
    try:
        return parse_mem_mib(props.get(key, default))
    except ValueError:
        notes.append(f"{key}={props[key]!r} is no size: {default} taken")
        return parse_mem_mib(default)


def _whole(props: dict, key: str, default: int | None) -> int | None:
    text = str(props.get(key, "")).strip()
    return int(text) if text.isdigit() else default


def peak_executors(facts: AppFacts) -> int:
    """The most executors the app held at once."""
    moves = sorted([(e.added_ms, 1) for e in facts.executors]
                   + [(e.removed_ms, -1) for e in facts.executors if e.removed_ms is not None])
    held = peak = 0
    for _, step in moves:
        held += step
        peak = max(peak, held)
    return peak


def quantiles(durations_s: list[float], n: int = 10) -> list[float]:
    """The ``n + 1`` evenly spaced quantiles, min to max (linear between order statistics)."""
    xs = sorted(durations_s)
    out = []
    for k in range(n + 1):
        pos = k * (len(xs) - 1) / n
        lo = int(pos)
        hi = min(lo + 1, len(xs) - 1)
        out.append(round(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo), 3))
    return out


def warm_up(facts: AppFacts) -> tuple[float, dict[int, list[int]]]:
    """What a new executor costs beyond its stage's usual task: from when it was added (or
    its stage submitted, if later) to its first task's end, less the median of the stage's
    other tasks - the task offered to it, its Python worker starting. The median over the
    executors whose first task completed; and by stage the durations of those first tasks, to
    leave out of the stage's task times (the warm-up is counted once, apart)."""
    firsts: dict[int, list[FirstTask]] = {}
    for t in facts.first_tasks:
        if t.done:
            firsts.setdefault(t.stage_id, []).append(t)
    extra: list[float] = []
    apart: dict[int, list[int]] = {}
    for s in facts.stages:
        rest, mine = list(s.durations_ms), []
        for t in firsts.get(s.stage_id, ()):
            if t.duration_ms in rest:  # else its task ran again later: not among the times
                rest.remove(t.duration_ms)
                mine.append(t)
        if not mine or not rest:  # none, or nothing to compare with: kept as they ran
            continue
        usual = statistics.median(rest)
        for t in mine:
            since = max(t.added_ms or t.launch_ms, s.submitted_ms or 0)
            waited = max(t.launch_ms - since, 0)
            extra.append((waited + t.duration_ms - usual) / 1000.0)
        apart[s.stage_id] = [t.duration_ms for t in mine]
    return (max(statistics.median(extra), 0.0) if extra else 0.0), apart


def _stage(s: StageFacts, ran: set[int], firsts: list[int] | None = None) -> dict:
    kept = list(s.durations_ms)
    for d in firsts or ():
        kept.remove(d)
    durations = [max(d / 1000.0, 0.001) for d in kept]
    if not durations:  # no task's end was logged: the stage's span stands for each task
        span = ((s.completed_ms or 0) - (s.submitted_ms or 0)) / 1000.0
        durations = [max(span, 0.001)]
    entry: dict = {"id": s.stage_id, "tasks": max(s.tasks, 1),
                   "task_s": round(max(statistics.fmean(durations), 0.001), 3)}
    # deciles; a stage of few tasks gets as many quantiles as it has tasks (no more to say)
    qs = [max(q, 0.001) for q in quantiles(durations, min(10, max(len(durations) - 1, 1)))]
    if qs[0] != qs[-1]:
        entry["task_s_quantiles"] = qs
    after = [p for p in s.parents if p in ran]
    if after:
        entry["after"] = after
    return entry


def _ramp(props: dict, notes: list[str]) -> dict[str, str]:
    """Its backlog timeouts as it ran (Spark's defaults where unset), so that the simulated
    app ramps its executor requests up as Spark did (``spark/allocation.py``)."""
    try:
        first, then = backlog_timeouts(props) or (SPARK_BACKLOG_S, SPARK_BACKLOG_S)
    except ValueError as e:
        notes.append(f"its backlog timeouts do not parse ({e}): Spark's defaults taken")
        first = then = SPARK_BACKLOG_S
    return {BACKLOG: f"{first:g}s", SUSTAINED_BACKLOG: f"{then:g}s"}


def _executors(props: dict, facts: AppFacts, stages: bool) -> tuple[int, int | None]:
    if dynamic_allocation(props):
        low = _whole(props, "spark.dynamicAllocation.minExecutors", 0) or 0
        high = _whole(props, "spark.dynamicAllocation.maxExecutors", None)
        return low, (None if high is None or high >= INT_MAX or high < 1 else max(high, low))
    count = _whole(props, "spark.executor.instances", None)
    if count is None:
        count = peak_executors(facts)
    count = max(count, 1) if stages else count
    return count, (count if count >= 1 else None)


def app_entry(facts: AppFacts, submit_s: float, name: str, queue_rules: tuple[Rule, ...] = (),
              priority_rules: tuple[Rule, ...] = (), defaults: Defaults | None = None) -> Entry:
    """The workload entry of one app (module doc)."""
    defaults = defaults or Defaults()
    props = dict(facts.properties)
    launched = props.get(LAUNCH_MARKER)
    head = f"{facts.app_id or 'app'} ({facts.name}, Spark {facts.spark_version or '?'}):"
    if stamped_submit_ms(facts) is not None:
        notes = [f"{head} submit is its submission, as sessionsched stamped it"]
    else:
        notes = [f"{head} submit is its start (a log holds no submission"
                 + (f"; sessionsched's store has it, as app {launched})" if launched else ")")]
    app: dict = {"name": name, "submit": round(submit_s, 3)}
    queue = props.get(QUEUE_KEY, "").strip() or None
    if queue is None and (rule := _first(queue_rules, facts)):
        queue = rule.value
        notes.append(f"queue by rule {rule.kind}:{rule.pattern}")
    app["queue"] = queue or defaults.queue
    if facts.user:
        app["user"] = facts.user
    app["priority"] = _priority(props, facts, priority_rules, defaults, notes)
    cores_seen = max((e.cores for e in facts.executors), default=_local_cores(props, notes))
    app["driver"] = {"cores": _whole(props, "spark.driver.cores", 1),
                     "memory": f"{_size(props, 'spark.driver.memory', '1g', notes)}m",
                     "in_cluster": props.get("spark.submit.deployMode", "").strip() == "cluster"}
    app["executor"] = {"cores": max(_whole(props, "spark.executor.cores", cores_seen) or 1, 1),
                       "memory": f"{_size(props, 'spark.executor.memory', '1g', notes)}m"}
    low, high = _executors(props, facts, bool(facts.stages))
    app["min_executors"] = low
    if high is not None:
        app["max_executors"] = high
    slots = _whole(props, "spark.ego.slots.max", None)
    if slots:
        app["slots_max"] = max(slots, app["executor"]["cores"])
    first = min((s.submitted_ms for s in facts.stages if s.submitted_ms is not None),
                default=facts.first_job_ms if facts.first_job_ms is not None else facts.end_ms)
    app["startup_s"] = round(max(first - facts.start_ms, 0) / 1000.0, 3)
    ran = {s.stage_id for s in facts.stages}
    warm_s, firsts = warm_up(facts)
    app["stages"] = [_stage(s, ran, firsts.get(s.stage_id) if warm_s else None)
                     for s in facts.stages]
    ended = None  # the latest end of the stages submitted so far
    for s, entry in zip(facts.stages, app["stages"], strict=True):
        if ended is not None and s.submitted_ms is not None and s.submitted_ms > ended:
            entry["gap_s"] = round((s.submitted_ms - ended) / 1000.0, 3)
        if s.completed_ms is not None:
            ended = s.completed_ms if ended is None else max(ended, s.completed_ms)
    if ended is not None and facts.end_ms > ended:
        app["tail_s"] = round((facts.end_ms - ended) / 1000.0, 3)
    if warm_s:
        app["warmup_s"] = round(warm_s, 3)
    if facts.exit_code:
        app["exit_code"] = facts.exit_code
    conf = {k: v for k, v in sorted(props.items())
            if k.startswith(RESOURCE_PREFIXES) or k == "spark.task.cpus"}
    if dynamic_allocation(props):
        conf.update(_ramp(props, notes))
    gang = {k: v for k, v in sorted(props.items()) if k.startswith(GANG_PREFIXES)}
    try:
        gang_from_conf(gang)
        conf.update(gang)
    except ValueError as e:
        notes.append(f"gang properties left out: {e}")
    if conf:
        app["conf"] = conf
    return Entry({k: v for k, v in app.items() if v is not None}, tuple(notes))


def stamped_submit_ms(facts: AppFacts) -> int | None:
    """The app's submission as sessionsched stamped it at launch (epoch ms), if it did."""
    text = str(facts.properties.get(SUBMIT_TIME, "")).strip()
    return int(text) if text.isdigit() else None


def submit_ms(facts: AppFacts) -> int:
    """When the app was submitted: the stamp, else its start (module doc)."""
    stamped = stamped_submit_ms(facts)
    return stamped if stamped is not None and stamped <= facts.start_ms else facts.start_ms


def _local_cores(props: dict, notes: list[str]) -> int:
    """An app run with ``spark.master=local[N]`` had no executor: its driver ran the tasks on
    N cores, taken here as one executor of N cores (``local[*]``: the machine's, unknown)."""
    m = re.fullmatch(r"local\[(\d+)(?:,\s*\d+)?\]", props.get("spark.master", "").strip())
    if m is None:
        return 1
    notes.append(f"spark.master {props['spark.master']}: its driver's {m.group(1)} cores taken "
                 "as one executor")
    return max(int(m.group(1)), 1)


def _priority(props: dict, facts: AppFacts, rules: tuple[Rule, ...], defaults: Defaults,
              notes: list[str]) -> int:
    if PRIORITY_KEY in props:
        try:
            return parse_priority(props[PRIORITY_KEY])
        except ValueError as e:
            notes.append(f"{PRIORITY_KEY}: {e}; the default taken")
    elif (rule := _first(rules, facts)) is not None:
        try:
            value = parse_priority(rule.value)
            notes.append(f"priority by rule {rule.kind}:{rule.pattern}")
            return value
        except ValueError as e:
            notes.append(f"priority rule {rule.kind}:{rule.pattern}: {e}")
    return defaults.priority
