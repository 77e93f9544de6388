"""The custom resources' displays worked out from the published view
(``service/resource_view``): what an app holds (executors; an in-cluster driver while it
runs), a queue's caps and guarantees as queues carry them (name -> amount pairs)."""

from __future__ import annotations

from types import SimpleNamespace

from sessionsched.engine.view import AppFacts
from sessionsched.model import AppSpec, AppState, Queue, Resources
from sessionsched.service.resource_view import app_held, queue_caps

GPU = (("gpu", 1),)
SPEC = AppSpec("a", "root.ml", 1, 0.0, driver=Resources(1, 1024, GPU), driver_in_cluster=True,
               executor=Resources(2, 2048, (("gpu", 2),)))


def facts(state: AppState, executors: int) -> AppFacts:
    return AppFacts(app_id="a", queue="root.ml", seq=1, state=state, priority=0, reason="",
                    spark_app_id=None, launched_at=None, first_executor_at=None,
                    finished_at=None, exit_code=None, executors=executors, target=executors,
                    grant=executors, demand=executors)


def test_an_app_holds_its_executors_amounts_and_its_in_cluster_drivers_while_it_runs():
    assert app_held(SPEC, facts(AppState.RUNNING, 3)) == {"gpu": 7}
    assert app_held(SPEC, facts(AppState.ACCEPTED, 0)) == {}
    assert app_held(SPEC, facts(AppState.FINISHED, 1)) == {"gpu": 2}  # not released yet
    assert app_held(SPEC, None) == {}


def test_caps_and_guarantees_as_pairs_or_a_map_and_none_without_them():
    assert queue_caps(Queue("root.ml")) == {}
    capped = SimpleNamespace(max_resources=(("gpu", 4), ("fpga", 1)),
                             min_resources={"gpu": 2})
    assert queue_caps(capped) == {"gpu": {"max": 4, "min": 2}, "fpga": {"max": 1, "min": None}}
