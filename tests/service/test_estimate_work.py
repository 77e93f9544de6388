"""What the estimated starts assume an app has to work (docs/design/estimates.md): its name's
earlier runs counted from their first executor (``store.work_lengths``), and a launched app's
work left counted from its own first executor (``estimating.live.left_s``): the time an app
waited for executors in a busy cluster is not work, and the forward run simulates the waits of
its own time itself."""

from __future__ import annotations

import pytest

from sessionsched.model import AppSpec, AppState, Resources
from sessionsched.model.submission import Submission
from sessionsched.service.estimating.live import left_s
from sessionsched.store import Store, StoredApp, Writer
from sessionsched.store.work_lengths import work_lengths

LEFT = {
    # name: (run_s, now, first_executor_at, what is left)
    "no executor yet: all of it, however long ago the launch": (300.0, 1000.0, None, 300.0),
    "working for 100 s of 300": (300.0, 1000.0, 900.0, 200.0),
    "first executor just now": (300.0, 1000.0, 1000.0, 300.0),
    "past a short run: within a minute": (100.0, 1000.0, 850.0, 60.0),
    "past a long run: within a quarter of it": (400.0, 1000.0, 500.0, 100.0),
}


@pytest.mark.parametrize("case", LEFT)
def test_a_launched_app_has_left_its_run_less_the_time_since_its_first_executor(case):
    run_s, now, first, left = LEFT[case]
    assert left_s(run_s, now, first) == pytest.approx(left)


RUNS = {
    # name: (state, started_at, first_executor_at, finished_at); the name's work lengths
    "quick": (AppState.FINISHED, 100.0, 110.0, 210.0),  # 100 s, its executor at once
    "waited": (AppState.FINISHED, 100.0, 400.0, 500.0),  # 100 s after 300 s without one
    "driver-only": (AppState.FINISHED, 100.0, None, 130.0),  # no executor: from the launch
    "failed": (AppState.FAILED, 100.0, 110.0, 900.0),  # not a run to its end: not counted
    "running": (AppState.RUNNING, 100.0, 110.0, None),
}
WORKED = {"quick": [100.0], "waited": [100.0], "driver-only": [30.0]}


def stored(i: int, name: str) -> StoredApp:
    state, started, first, finished = RUNS[name]
    spec = AppSpec(app_id=f"app-{i}", queue="root.default", seq=i, submitted_at=float(i),
                   name=name, user="u", executor=Resources(2, 2048), max_executors=4)
    return StoredApp(Submission(spec=spec, kind="submit", argv=("app.py",)), state=state,
                     started_at=started, first_executor_at=first, finished_at=finished)


def test_a_names_work_lengths_count_from_the_first_executor(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'state.db'}")
    writer = Writer(store)
    writer.start()
    try:
        apps = [stored(i, name) for i, name in enumerate(RUNS)]
        writer.submit(lambda s: Store.add_apps(s, apps)).result(5)
        assert work_lengths(store, [*RUNS, "never-run"]) == WORKED
        assert store.run_lengths(["waited"]) == {"waited": [400.0]}  # launch to end: kept
        assert work_lengths(store, []) == {}
    finally:
        writer.stop()
        store.close()
