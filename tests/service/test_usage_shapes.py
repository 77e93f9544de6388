"""The usage meter with executors of another shape than the app's own (stage-level resource
profiles: ``service/usage_meter/shapes``): each executor counts by its profile's shape as the
app's agent reported it, placed in time as any executor; an app with its own executors alone
counts as it always did. The reports here carry a profile as an agent that reads profiles
does (``Executor.profile``, ``DemandChanged.profiles``)."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from sessionsched.engine.events import DemandChanged, ExecutorsChanged, MarkState, Reclaim
from sessionsched.model import AppSpec, AppState, ReclaimMode, Resources
from sessionsched.model.usage import AppUsage
from sessionsched.service.usage_meter import UsageMeter

SPEC = AppSpec("a", "root.q", 1, 100.0, user="u", driver=Resources(1, 1024),
               executor=Resources(2, 2048))
GPU_SHAPE = Resources(1, 1024, (("gpu", 1),))


@dataclass(frozen=True)
class Exec:  # an executor as a report with profiles has it
    executor_id: str
    started_at: float = 0.0
    idle: bool = False
    profile: int = 0


@dataclass(frozen=True)
class Demand(DemandChanged):  # the demand with each profile's shape
    profiles: tuple = ()


SHAPES = Demand("a", 2, (SimpleNamespace(profile_id=1, executor=GPU_SHAPE),))


def run(m: UsageMeter, steps) -> dict:
    out = {}
    for now, events, decisions in steps:
        out = m.step(now, events, decisions).get("a", out)
    return out


def started(at):
    return MarkState("a", AppState.STARTING, "launched", at=at)


def ended(at):
    return MarkState("a", AppState.FINISHED, "done", at=at)


def test_a_profiles_executors_count_by_its_shape():
    m = UsageMeter({"a": SPEC}.get)
    last = run(m, [
        (110.0, [], [started(110.0)]),
        (120.0, [SHAPES, ExecutorsChanged("a", (Exec("0"), Exec("1", profile=1)))], []),
        (130.0, [ExecutorsChanged("a", (Exec("0"),))], []),
        (140.0, [], [ended(140.0)]),
    ])
    f = AppUsage.from_json(last).figures()
    # 10 s of 2 + 1 cores, then 10 s of 2; the GPU executor's 1 gpu for 10 s
    assert (f["held_core_s"], f["busy_core_s"], f["held_gib_s"]) == (50.0, 50.0, 50.0)
    assert (f["gpu_held_s"], f["gpu_busy_s"]) == (10.0, 10.0)


def test_timed_reports_place_each_profiles_changes_and_a_kill_loses_its_shape():
    m = UsageMeter({"a": SPEC}.get)
    last = run(m, [
        (110.0, [], [started(110.0)]),
        # the GPU executor registered at 115, seen at 119.5
        (120.0, [SHAPES, ExecutorsChanged("a", (Exec("0", 112.0), Exec("1", 115.0, profile=1)),
                                          observed_at=119.5)], []),
        (125.0, [], [Reclaim("a", ("1",), ReclaimMode.KILL)]),
        # gone, removed by its driver at 126
        (127.0, [ExecutorsChanged("a", (Exec("0", 112.0),), observed_at=126.5,
                                  removed=(("1", 126.0),))], []),
        (140.0, [], [ended(140.0)]),
    ])
    f = AppUsage.from_json(last).figures()
    assert f["gpu_held_s"] == 11.0  # 115 -> 126
    assert f["gpu_busy_s"] == 6.5  # busy from the look at 119.5 (no span given) to 126
    assert f["gpu_reclaimed_s"] == 6.5 and f["reclaimed_core_s"] == 6.5  # 1 core, 1 gpu
    assert f["held_core_s"] == 2 * 28.0 + 11.0  # executor 0 from 112, executor 1 as above
