"""A launched app's work left from its stages (``service/estimating/stages.py``): named cases,
each with its figures worked out by hand, and the progress book that feeds it."""

from __future__ import annotations

import pytest

from sessionsched.model.stages import ActiveStage, DoneStage, Progress, run_from_json, run_to_json
from sessionsched.service.estimating.progress import ProgressBook
from sessionsched.service.estimating.stages import left_by_stage

NOW = 1000.0
D = DoneStage
A = ActiveStage
# Two earlier runs of three stages: 8 tasks of 10 s, then 8 of 30 s (or 50), then 4 of 20 s.
RUNS = [(D(8, 10.0), D(8, 30.0), D(4, 20.0)), (D(8, 12.0), D(8, 50.0), D(4, 20.0))]

CASES = [
    # (id, progress, runs, executors, cores, expected seconds left)
    ("first stage, a wave running 4 s of the median 11, one wave pending, then the rest",
     Progress((), (A(8, 0, 4, 4.0),), NOW), RUNS, 2, 2,
     (11 - 4) + 11 + 2 * 40 + 1 * 20),
    ("a report 3 s old: its tasks ran on meanwhile",
     Progress((), (A(8, 0, 4, 4.0),), NOW - 3.0), RUNS, 2, 2,
     (11 - 7) + 11 + 2 * 40 + 1 * 20),
    ("a stage slower than its runs: its wave is as long as it has run, its next wave too",
     Progress((D(8, 11.0),), (A(8, 4, 4, 55.0),), NOW), RUNS, 2, 2,
     0 + 0 * 55 + 1 * 20),
    ("slots from the running tasks while tasks are pending (2 tasks on 2 cores: a GPU each)",
     Progress((D(8, 11.0),), (A(8, 0, 2, 10.0),), NOW), RUNS, 2, 2,
     (40 - 10) + 3 * 40 + 2 * 20),
    ("a running stage with tasks done: their mean length, not its runs' median",
     Progress((D(8, 11.0),), (A(8, 4, 4, 5.0, 60.0),), NOW), RUNS, 2, 2,
     (60 - 5) + 1 * 20),
    ("... and a task running past that mean is a straggler: its pending ones take the mean",
     Progress((D(8, 11.0),), (A(8, 2, 2, 70.0, 60.0),), NOW), RUNS, 2, 2,
     0 + 2 * 60 + 2 * 20),
    ("the last wave: slots from the executors' cores",
     Progress((D(8, 11.0), D(8, 40.0)), (A(4, 0, 4, 5.0),), NOW), RUNS, 3, 2,
     20 - 5),
    ("no executor yet, nothing running: the caller's executors (its width) set the pace",
     Progress((), (A(8, 0, 0, None),), NOW), RUNS, 4, 2,
     11 + 1 * 40 + 1 * 20),
    ("how far the running tasks are is not known: half a task",
     Progress((D(8, 11.0), D(8, 40.0)), (A(4, 0, 4, None),), NOW), RUNS, 2, 2,
     10),
    ("between two stages (its driver alone): only the stages to come",
     Progress((D(8, 11.0),), (), NOW), RUNS, 2, 2,
     2 * 40 + 1 * 20),
    ("runs of different lengths: as many stages as the median run has",
     Progress((D(8, 11.0),), (), NOW), [RUNS[0], RUNS[1][:2], RUNS[1][:2]], 2, 2,
     2 * 50),
]


@pytest.mark.parametrize(("progress", "runs", "executors", "cores", "left"),
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_work_left_by_stage(progress, runs, executors, cores, left):
    assert left_by_stage(progress, runs, executors, cores, NOW) == pytest.approx(left)


@pytest.mark.parametrize(("progress", "runs"), [
    pytest.param(Progress((), (A(8, 0, 4, 1.0),), NOW), [], id="no-earlier-run"),
    pytest.param(Progress((), (A(8, 0, 4, 1.0),), NOW), [()], id="earlier-runs-without-stages"),
    pytest.param(Progress((), (), NOW), RUNS, id="no-stage-begun-yet"),
    pytest.param(Progress(RUNS[0], (A(2, 0, 2, 1.0),), NOW), RUNS,
                 id="past-its-runs-stages"),
])
def test_nothing_said_where_the_stages_say_nothing(progress, runs):
    assert left_by_stage(progress, runs, 2, 2, NOW) is None


def test_a_run_is_kept_each_time_it_completes_a_stage_and_forgotten_once_not_launched():
    writes: list[list[dict]] = []
    book = ProgressBook(lambda changes, rows: writes.append(changes))
    first = Progress((D(8, 10.0),), (A(8, 0, 4, 1.0),), NOW)
    book.report("a", first)
    book.report("a", Progress((D(8, 10.0),), (A(8, 4, 4, 2.0),), NOW + 1))  # no new stage
    book.report("b", Progress((), (A(2, 0, 2, 1.0),), NOW))  # none completed: nothing kept
    book.report("a", Progress((D(8, 10.0), D(8, 33.0)), (), NOW + 2))
    assert writes == [[{"id": "a", "stages": [[8, 10.0]]}],
                      [{"id": "a", "stages": [[8, 10.0], [8, 33.0]]}]]
    assert set(book.snapshot(["a", "b"])) == {"a", "b"}
    assert set(book.snapshot(["b"])) == {"b"}
    assert book.snapshot(["a", "b"]).keys() == {"b"}


def test_a_stored_run_reads_back_and_an_unreadable_one_reads_as_none():
    run = (D(8, 10.5), D(3, 0.25))
    assert run_from_json(run_to_json(run)) == run
    assert run_from_json([["x", 1]]) == ()
    assert run_from_json(None) == ()
