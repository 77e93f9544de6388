"""One application's event log (its JSON lines) -> the facts a workload is built from.

The events read (Spark's ``JsonProtocol`` names; every other event is passed over):
``SparkListenerLogStart`` (the Spark version), ``SparkListenerEnvironmentUpdate`` (the Spark
properties), ``SparkListenerApplicationStart``/``End`` (name, id, user, times, exit code),
``SparkListenerExecutorAdded``/``Removed`` (host, cores, times), ``SparkListenerJobStart``,
``SparkListenerStageSubmitted``/``Completed`` (tasks, parents, times) and
``SparkListenerTaskEnd`` (each successful task's launch and finish).

A task's time is its wall time on the executor, launch to finish: what held the core. A stage
that ran more than once (a retried attempt) is one stage: its tasks' last successful runs.

A log that is not one app's whole run raises ``UnreadableLog``: a first line that is not a
Spark event, a line cut short, an event whose fields are not of the types Spark writes (a
time that is no number, a list for a map), no application start or no application end (the
driver was killed, or the log was copied while the app ran).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from .codecs import UnreadableLog


@dataclass(frozen=True)
class StageFacts:
    stage_id: int
    name: str
    tasks: int
    parents: tuple[int, ...]  # the stage ids it read from (Spark's "Parent IDs")
    submitted_ms: int | None
    completed_ms: int | None
    durations_ms: tuple[int, ...]  # each successful task's launch-to-finish, by task index


@dataclass(frozen=True)
class ExecutorFacts:
    executor_id: str
    host: str
    cores: int
    added_ms: int
    removed_ms: int | None  # None: held to the app's end


@dataclass(frozen=True)
class FirstTask:
    """The first task an executor ran, whatever its end: a task killed with its executor says
    only that it took longer than it ran (``done`` False). ``added_ms``: when the executor
    was added, if the log says."""

    executor_id: str
    stage_id: int
    index: int
    duration_ms: int
    done: bool
    launch_ms: int
    added_ms: int | None


@dataclass(frozen=True)
class AppFacts:
    app_id: str
    name: str
    user: str
    start_ms: int
    end_ms: int
    exit_code: int | None
    spark_version: str
    properties: Mapping[str, str]
    stages: tuple[StageFacts, ...]  # in the order they were first submitted
    executors: tuple[ExecutorFacts, ...]
    first_job_ms: int | None
    first_tasks: tuple[FirstTask, ...] = ()


@dataclass
class _Stage:
    stage_id: int
    name: str = ""
    tasks: int = 0
    parents: tuple[int, ...] = ()
    submitted_ms: int | None = None
    completed_ms: int | None = None
    durations: dict[int, int] = field(default_factory=dict)  # task index -> ms

    def seen(self, info: Mapping) -> None:
        self.name = str(info.get("Stage Name") or self.name)
        self.tasks = max(self.tasks, int(info.get("Number of Tasks") or 0))
        self.parents = tuple(sorted(int(p) for p in info.get("Parent IDs") or ())) or self.parents
        if self.submitted_ms is None and info.get("Submission Time") is not None:
            self.submitted_ms = int(info["Submission Time"])
        if info.get("Completion Time") is not None:
            self.completed_ms = int(info["Completion Time"])

    def facts(self) -> StageFacts:
        return StageFacts(self.stage_id, self.name, self.tasks, self.parents, self.submitted_ms,
                          self.completed_ms, tuple(v for _, v in sorted(self.durations.items())))


@dataclass
class _App:
    version: str = ""
    props: dict[str, str] = field(default_factory=dict)
    start: Mapping | None = None
    end: Mapping | None = None
    start_ms: int = 0
    end_ms: int = 0  # 0: the end event has no time (the app's start is taken)
    stages: dict[int, _Stage] = field(default_factory=dict)  # insertion order: submission
    executors: dict[str, list] = field(default_factory=dict)
    first_job_ms: int | None = None
    first_tasks: dict[str, FirstTask] = field(default_factory=dict)  # by executor id


def _records(lines: list[str]) -> list[tuple[int, Mapping]]:
    """Each Spark event with its line's number."""
    out = []
    for n, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except ValueError:
            if n == 1:
                raise UnreadableLog("not a Spark event log (its first line is not JSON)") from None
            if n == len(lines):
                raise UnreadableLog("truncated (its last line is cut short)") from None
            raise UnreadableLog(f"damaged (line {n} is not JSON)") from None
        if not isinstance(record, dict) or "Event" not in record:
            if n == 1:
                raise UnreadableLog("not a Spark event log (its first line is no Spark event)")
            continue
        out.append((n, record))
    if not out:
        raise UnreadableLog("empty")
    return out


def parse_app(lines: list[str]) -> AppFacts:
    """The facts of the one app whose log ``lines`` are; UnreadableLog (module doc)."""
    app = _App()
    for n, rec in _records(lines):
        try:
            _HANDLERS.get(rec["Event"], _ignore)(app, rec)
        except (TypeError, ValueError, AttributeError, OverflowError):
            # A field no Spark writes so (``int()`` of a list, of "soon", of 1e400; ``.get``
            # on a string): the log was damaged or made by hand, and is left out like one cut
            # short, not the end of the whole command.
            raise UnreadableLog(f"damaged (line {n}: a field is not of the type Spark "
                                "writes)") from None
    if app.start is None:
        raise UnreadableLog("incomplete: no SparkListenerApplicationStart")
    if app.end is None:
        raise UnreadableLog("incomplete: no SparkListenerApplicationEnd (cut short, or copied "
                            "while the app ran)")
    start_ms = app.start_ms
    end_ms = app.end_ms or start_ms
    exit_code = app.end.get("ExitCode")  # Spark 4 writes it; earlier Sparks do not
    if not isinstance(exit_code, int) or isinstance(exit_code, bool):
        exit_code = None
    executors = tuple(
        ExecutorFacts(eid, host, cores, added, removed)
        for eid, (host, cores, added, removed) in app.executors.items())
    return AppFacts(
        app_id=str(app.start.get("App ID") or ""),
        name=str(app.start.get("App Name") or app.start.get("App ID") or "app"),
        user=str(app.start.get("User") or ""),
        start_ms=start_ms,
        end_ms=max(end_ms, start_ms),
        exit_code=exit_code,
        spark_version=app.version,
        properties=dict(app.props),
        stages=tuple(s.facts() for s in app.stages.values() if s.submitted_ms is not None),
        executors=executors,
        first_job_ms=app.first_job_ms,
        first_tasks=tuple(app.first_tasks.values()),
    )


def _ignore(app: _App, rec: Mapping) -> None:
    pass


def _log_start(app: _App, rec: Mapping) -> None:
    app.version = str(rec.get("Spark Version") or "")


def _environment(app: _App, rec: Mapping) -> None:
    props = rec.get("Spark Properties") or {}
    if isinstance(props, list):  # pairs, as some writers have it
        props = {str(p[0]): p[1] for p in props if isinstance(p, list) and len(p) == 2}
    app.props.update({str(k): str(v) for k, v in props.items()})


def _app_start(app: _App, rec: Mapping) -> None:
    app.start = rec
    app.start_ms = int(rec.get("Timestamp") or 0)


def _app_end(app: _App, rec: Mapping) -> None:
    app.end = rec
    app.end_ms = int(rec.get("Timestamp") or 0)


def _executor_added(app: _App, rec: Mapping) -> None:
    if rec.get("Executor ID") == "driver":  # local mode: the driver runs the tasks
        return
    info = rec.get("Executor Info") or {}
    app.executors[str(rec.get("Executor ID"))] = [
        str(info.get("Host") or ""), int(info.get("Total Cores") or 1),
        int(rec.get("Timestamp") or 0), None]


def _executor_removed(app: _App, rec: Mapping) -> None:
    held = app.executors.get(str(rec.get("Executor ID")))
    if held is not None:
        held[3] = int(rec.get("Timestamp") or 0)


def _job_start(app: _App, rec: Mapping) -> None:
    at = rec.get("Submission Time")
    if at is not None and app.first_job_ms is None:
        app.first_job_ms = int(at)


def _stage(app: _App, rec: Mapping) -> None:
    info = rec.get("Stage Info") or {}
    sid = int(info.get("Stage ID", -1))
    app.stages.setdefault(sid, _Stage(sid)).seen(info)


def _task_end(app: _App, rec: Mapping) -> None:
    reason = rec.get("Task End Reason") or {}
    info = rec.get("Task Info") or {}
    sid = int(rec.get("Stage ID", -1))
    launched, finished = info.get("Launch Time"), info.get("Finish Time")
    if launched is None or not finished:
        return
    launched = int(launched)
    done = reason.get("Reason") == "Success" and not info.get("Failed") and not info.get("Killed")
    stage = app.stages.setdefault(sid, _Stage(sid))
    index = int(info.get("Index", len(stage.durations)))
    took = max(0, int(finished) - launched)
    eid = str(info.get("Executor ID", ""))
    first = app.first_tasks.get(eid)
    if eid and eid != "driver" and (first is None or launched < first.launch_ms):
        seen = app.executors.get(eid)
        app.first_tasks[eid] = FirstTask(eid, sid, index, took, done, launched,
                                         seen and seen[2])
    if done:
        stage.durations[index] = took


_HANDLERS = {
    "SparkListenerLogStart": _log_start,
    "SparkListenerEnvironmentUpdate": _environment,
    "SparkListenerApplicationStart": _app_start,
    "SparkListenerApplicationEnd": _app_end,
    "SparkListenerExecutorAdded": _executor_added,
    "SparkListenerExecutorRemoved": _executor_removed,
    "SparkListenerJobStart": _job_start,
    "SparkListenerStageSubmitted": _stage,
    "SparkListenerStageCompleted": _stage,
    "SparkListenerTaskEnd": _task_end,
}
