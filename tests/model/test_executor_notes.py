"""Why an app that runs holds fewer executors than it wants (``model.executor_notes``), by
named cases: the figures of an admitted app against the workers as the watch last saw them;
each case's notes, and the one code a list gives it."""

from __future__ import annotations

import pytest

from sessionsched.model import Resources, Worker
from sessionsched.model.executor_notes import (
    Executors,
    NoteCode,
    executor_notes,
    executor_wait,
    workers_seen,
)


def _app(held: int, grant: int, target: int, demand: int, asks: dict | None = None,
         policy: str | None = "fairshare", running: int = 2) -> Executors:
    return Executors(held, grant, target, demand, "root.ml", policy, running,
                     tuple(sorted((asks or {}).items())))


def _workers(*free_gpus: int) -> list[Worker]:
    """Workers of 8 cores/16 GiB and 2 GPUs, worker i with 4 - i cores free."""
    return [Worker(f"w{i}", Resources(8, 16384, (("gpu", 2),)),
                   Resources(4 - i, 8192, (("gpu", n),) if n else ()))
            for i, n in enumerate(free_gpus)]


def _free(*free_gpus: int) -> dict:
    return {"gpu": {"capacity": 2 * len(free_gpus), "used": 0, "free": sum(free_gpus)}}


ROOM = ("waiting for room: the cluster has 7 cores/16384 MiB free (the most on one worker: 4"
        " cores/8192 MiB); it comes as apps above their target give executors back")
SHARED = ("its target is below its demand: root.ml (fairshare) divides its executors among 2"
          " running app(s)")

CASES = {  # name: (app, workers, free, the notes expected: (code, text))
    "no GPU free on any worker": (
        _app(0, 0, 1, 2, {"gpu": 1}), _workers(0, 0), _free(0, 0),
        [(NoteCode.RESOURCE_SHORT,
          "waiting for gpu: each executor asks 1 gpu and no worker has that much free (0 of 4"
          " free in the cluster); it comes as apps above their target give executors back"),
         (NoteCode.TARGET_BELOW_DEMAND, SHARED)]),
    "a GPU free, but not two on one worker": (
        _app(0, 0, 1, 1, {"gpu": 2}), _workers(1, 1), _free(1, 1),
        [(NoteCode.RESOURCE_SHORT,
          "waiting for gpu: each executor asks 2 gpu and no worker has that much free (2 of 4"
          " free in the cluster); it comes as apps above their target give executors back")]),
    "the cluster's free amount not known: the most on one worker": (
        _app(0, 0, 1, 1, {"gpu": 2}), _workers(1, 1), None,
        [(NoteCode.RESOURCE_SHORT,
          "waiting for gpu: each executor asks 2 gpu and no worker has that much free (the"
          " most on one worker: 1); it comes as apps above their target give executors"
          " back")]),
    "GPUs free: the cores and memory free are said": (
        _app(1, 1, 2, 2, {"gpu": 1}), _workers(1, 0), _free(1, 0),
        [(NoteCode.ROOM_SHORT, ROOM)]),
    "no custom resource asked": (
        _app(0, 0, 3, 3), _workers(0, 0), _free(0, 0), [(NoteCode.ROOM_SHORT, ROOM)]),
    "granted its whole target: only how the queue divides": (
        _app(2, 2, 2, 5, {"gpu": 1}), _workers(0, 0), _free(0, 0),
        [(NoteCode.TARGET_BELOW_DEMAND, SHARED)]),
    "granted, not up yet: starting": (
        _app(0, 2, 2, 2, {"gpu": 1}), _workers(0, 0), _free(0, 0),
        [(NoteCode.EXECUTORS_STARTING, "2 granted executor(s) starting")]),
    "behind several clusters the workers are every cluster's: no figure": (
        _app(0, 0, 1, 1, {"gpu": 1}), None, None, []),
    "no worker named: no figure": (
        _app(0, 0, 1, 1), [], None, []),
    "its queue's policy not known: nothing said of it": (
        _app(3, 3, 3, 5, policy=None), _workers(0, 0), _free(0, 0), []),
    "held, granted, target and demand all met: nothing to say": (
        _app(3, 3, 3, 3, {"gpu": 1}), _workers(0, 0), _free(0, 0), []),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_admitted_apps_notes(case):
    app, workers, free, expected = CASES[case]
    notes = executor_notes(app, workers_seen(workers, free))
    assert [(n.code, n.text) for n in notes] == expected
    assert [n.resource for n in notes] == [
        "gpu" if code is NoteCode.RESOURCE_SHORT else None for code, _ in expected]


# The one code per app (a list's, ``/metrics``'): the room it waits for, before its queue's
# division, before executors starting; the case's expected code and resource.
WAITS = {
    "no GPU free on any worker": (NoteCode.RESOURCE_SHORT, "gpu"),
    "a GPU free, but not two on one worker": (NoteCode.RESOURCE_SHORT, "gpu"),
    "the cluster's free amount not known: the most on one worker": (NoteCode.RESOURCE_SHORT,
                                                                      "gpu"),
    "GPUs free: the cores and memory free are said": (NoteCode.ROOM_SHORT, None),
    "no custom resource asked": (NoteCode.ROOM_SHORT, None),
    "granted its whole target: only how the queue divides": (NoteCode.TARGET_BELOW_DEMAND, None),
    "granted, not up yet: starting": (NoteCode.EXECUTORS_STARTING, None),
    "behind several clusters the workers are every cluster's: no figure": None,
    "no worker named: no figure": None,
    "its queue's policy not known: nothing said of it": None,
    "held, granted, target and demand all met: nothing to say": None,
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_admitted_apps_one_code(case):
    app, workers, free, _ = CASES[case]
    assert executor_wait(app, workers_seen(workers, free)) == WAITS[case]


def test_the_room_a_list_names_comes_before_starting_executors_and_the_queues_division():
    app = _app(1, 2, 4, 6, {"gpu": 1})  # one starting, two short of a GPU, two by its queue
    seen = workers_seen(_workers(0, 0), _free(0, 0))
    assert [n.code for n in executor_notes(app, seen)] == [
        NoteCode.EXECUTORS_STARTING, NoteCode.RESOURCE_SHORT, NoteCode.TARGET_BELOW_DEMAND]
    assert executor_wait(app, seen) == (NoteCode.RESOURCE_SHORT, "gpu")
    assert executor_wait(_app(1, 2, 2, 6), seen) == (NoteCode.TARGET_BELOW_DEMAND, None)


def test_an_app_holding_its_demand_has_no_code_though_its_target_is_below():
    """Being taken down to its share (it holds 4, wants 4, its target is 2): its notes say its
    queue divides, but it is not short of executors, so no list counts it."""
    app = _app(4, 4, 2, 4)
    seen = workers_seen(_workers(0, 0), _free(0, 0))
    assert [n.code for n in executor_notes(app, seen)] == [NoteCode.TARGET_BELOW_DEMAND]
    assert executor_wait(app, seen) is None
