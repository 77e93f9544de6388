"""Where the app is in its stages: the stages it completed and the ones running now, for the
scheduler's estimate of the work a running app has left (docs/design/agent-protocol.md,
"Stages"). Read only for a report the agent sends anyway (a change, a keep-alive), never on
the quarter-second pulse nor at a look that sends nothing.

Spark's own records, reached over py4j like the rest of the agent's (``spark_control``):

* the running stages from the public status tracker (``JavaSparkStatusTracker``:
  ``getActiveStageIds``, ``getStageInfo(id)``: ``numTasks``, ``numCompletedTasks``,
  ``numActiveTasks``, ``currentAttemptId``), as ``SparkContext.statusTracker()`` lists them;
* how long the oldest running task of each has run: the status store's
  ``taskList(stage, attempt, 0, 1, Some("lt"), true, [RUNNING])``, its running task with the
  earliest launch time (``"lt"``, ``TaskIndexNames.LAUNCH_TIME``), one call that sorts the
  stage's tasks inside the JVM: asked only of a stage of at most ``MAX_SORTED`` tasks (the
  driver's CPU), and a Spark without it reports the stages without that time;
* each completed stage once, when it has left the running ones: the status store's
  ``lastStageAttempt(id)``, its status, task count, completion time and the stage's sums of
  its tasks' times; and for a running stage with tasks completed, the same sums so far (its
  tasks' mean time today).

A stage that began and ended between two looks (a second apart) was never seen running: stage
ids are handed out in order (``DAGScheduler.nextStageId``), so the ids below the highest one
seen that were never seen running are read once as well -- completed, skipped (never run) or
failed. A short stage after the last one seen running waits for the next stage seen running.
Nothing here raises: a failed read leaves the report without stages, and is logged once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger("sessionsched.agent")

# The first completed stages reported, at most: enough to place the app among its earlier
# runs, and a bound on the report (about 30 bytes a stage); an app with more sends the first.
MAX_DONE = 200
MAX_ACTIVE = 20  # the running stages reported, lowest ids first
MAX_READS = 20  # completed stages read in one look, at most: the rest are read at the next
MAX_SORTED = 10_000  # tasks of a stage whose oldest running one is looked for, at most
LAUNCH_TIME = "lt"  # the status store's index of its tasks by launch time
STILL_OPEN = frozenset({"ACTIVE", "PENDING"})  # a stage that may yet run: read it again later


@dataclass(frozen=True)
class DoneStage:
    tasks: int
    task_s: float  # its tasks' mean time, seconds (``task_seconds``)


@dataclass(frozen=True)
class ActiveStage:
    tasks: int
    done: int  # tasks completed
    running: int  # tasks running now
    oldest_running_s: float | None  # how long its longest-running task has run; None: unknown
    task_s: float | None = None  # its completed tasks' mean time; None: none completed yet


@dataclass(frozen=True)
class StageFacts:
    done: tuple[DoneStage, ...]  # in the order they completed, the first MAX_DONE
    active: tuple[ActiveStage, ...]  # by stage id, the first MAX_ACTIVE


def stages_body(facts: StageFacts) -> dict:
    return {
        "done": [{"tasks": s.tasks, "task_s": s.task_s} for s in facts.done],
        "active": [{"tasks": s.tasks, "done": s.done, "running": s.running,
                    "oldest_running_s": s.oldest_running_s, "task_s": s.task_s}
                   for s in facts.active],
    }


def task_seconds(run_ms: int, deserialize_ms: int, serialize_ms: int, tasks: int) -> float:
    """A completed stage's mean task time: the status store keeps per-stage sums of its tasks'
    metrics, not of their launch-to-finish times, so this is the executor's part of a task
    (deserializing it, running it, serializing its result) without the scheduler's delay and
    the fetch of a large result. The sums include a failed attempt's time where its executor
    reported it (not a lost executor's), the count is the completed tasks'."""
    return round((run_ms + deserialize_ms + serialize_ms) / 1000.0 / tasks, 3) if tasks else 0.0


class StageBook:
    """Which stage ids to read from the status store at a look: the ones seen running that
    left, and those never seen running below the highest id seen (they ran between two looks,
    were skipped, or wait for a parent). Each is read until it is settled: completed (then
    counted once: a stage run again for lost shuffle output is not listed twice), skipped,
    failed or unknown to the store. A failed stage seen running again is watched again."""

    def __init__(self):
        self.top = 0  # one past the highest stage id seen
        self.watched: set[int] = set()  # seen or inferred, not yet settled
        self.counted: set[int] = set()  # listed as done

    def to_read(self, active: list[int]) -> list[int]:
        gap = range(self.top, max(active, default=-1))
        return sorted((self.watched | set(gap)) - set(active) - self.counted)[:MAX_READS]

    def settle(self, active: list[int], statuses: dict[int, str | None]) -> None:
        """``statuses``: each id read at this look -> its status (None: not in the store)."""
        top = max(active, default=self.top - 1) + 1
        self.watched |= set(range(self.top, top)) | set(active)
        self.top = max(self.top, top)
        for stage_id, status in statuses.items():
            if status == "COMPLETE":
                self.counted.add(stage_id)
            if status not in STILL_OPEN:
                self.watched.discard(stage_id)
        self.watched -= self.counted


class StageReader:
    """The app's stages, as of a look. ``sc``: the driver's SparkContext."""

    def __init__(self, sc):
        self._sc = sc
        self.book = StageBook()
        self.done: list[DoneStage] = []
        self._spark = None  # (its status tracker, its status store)
        self._oldest = True  # the status store answers a stage's oldest running task
        self._running_by_launch = None  # taskList's sort and filter: (Some("lt"), [RUNNING])
        self._failed = False  # a read failed (logged once)

    def look(self, now: float) -> StageFacts | None:
        """The stages as of ``now`` (epoch seconds, the driver's clock); None if Spark could
        not say. Never raises."""
        try:
            if self._spark is None:  # the context's for its life: three py4j calls saved a look
                jsc = self._sc._jsc
                self._spark = jsc.statusTracker(), jsc.sc().statusStore()
            tracker, store = self._spark
            active = sorted(int(i) for i in tracker.getActiveStageIds())
            if len(self.done) < MAX_DONE:
                self._read_done(store, active)
            return StageFacts(tuple(self.done[:MAX_DONE]),
                              self._read_active(tracker, store, active[:MAX_ACTIVE], now))
        except Exception as e:
            if not self._failed:
                self._failed = True
                log.warning("sessionsched agent: reading the app's stages failed (%s); its "
                            "reports go without them", _first_line(e))
            return None

    def _read_done(self, store, active: list[int]) -> None:
        """Each stage the book names, read once it is settled; the completed ones appended in
        the order they completed (Spark's completion time: several may have since the last)."""
        statuses: dict[int, str | None] = {}
        completed = []
        for stage_id in self.book.to_read(active):
            try:
                stage = store.lastStageAttempt(stage_id)
            except Exception as e:  # NoSuchElementException: evicted, or never stored
                if "NoSuchElementException" not in str(e):
                    raise
                statuses[stage_id] = None
                continue
            statuses[stage_id] = status = str(stage.status().name())
            if status == "COMPLETE":
                ended = stage.completionTime()
                at_ms = ended.get().getTime() if ended.isDefined() else 0
                completed.append((at_ms, stage_id, _done_stage(stage)))
        self.book.settle(active, statuses)
        self.done.extend(s for _, _, s in sorted(completed, key=lambda c: c[:2]))

    def _read_active(self, tracker, store, active: list[int], now: float):
        out = []
        for stage_id in active:
            info = tracker.getStageInfo(stage_id)
            if info is None:  # ended since it was listed
                continue
            running, tasks = int(info.numActiveTasks()), int(info.numTasks())
            done = int(info.numCompletedTasks())
            oldest = (self._oldest_running_s(store, stage_id, info.currentAttemptId(), now)
                      if running and tasks <= MAX_SORTED else None)
            out.append(ActiveStage(tasks, done, running, oldest,
                                   _mean_so_far(store, stage_id) if done else None))
        return tuple(out)

    def _oldest_running_s(self, store, stage_id: int, attempt: int, now: float):
        if not self._oldest:
            return None
        try:
            if self._running_by_launch is None:  # made once: each part is a py4j call
                jvm = self._sc._jvm
                running = jvm.java.util.ArrayList()
                running.add(jvm.org.apache.spark.status.api.v1.TaskStatus.RUNNING)
                self._running_by_launch = (jvm.scala.Some(LAUNCH_TIME), running)
            by_launch, running = self._running_by_launch
            tasks = store.taskList(stage_id, attempt, 0, 1, by_launch, True, running)
            if tasks.isEmpty():
                return None
            launched = tasks.head().launchTime().getTime() / 1000.0
        except Exception as e:
            self._oldest = False
            log.info("sessionsched agent: this Spark does not tell a running task's launch "
                     "time (%s); stages are reported without it", _first_line(e))
            return None
        return round(max(now - launched, 0.0), 3)


def _mean_so_far(store, stage_id: int) -> float | None:
    """A running stage's completed tasks' mean time (its status store's sums so far): how long
    its tasks take today, which its earlier runs' may not say. None if the store cannot say."""
    try:
        return _mean_task_s(store.lastStageAttempt(stage_id)) or None
    except Exception:  # noqa: BLE001 - evicted or ended since listed: the rest still counts
        return None


def _done_stage(stage) -> DoneStage:
    """A completed stage, from the status store's ``v1.StageData``."""
    return DoneStage(int(stage.numTasks()), _mean_task_s(stage))


def _mean_task_s(stage) -> float:
    """Its completed tasks' mean time, from a ``v1.StageData``'s sums (``task_seconds``)."""
    return task_seconds(stage.executorRunTime(), stage.executorDeserializeTime(),
                        stage.resultSerializationTime(), stage.numCompleteTasks())


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:300] if text else type(e).__name__
