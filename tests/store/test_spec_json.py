"""The spec as the store keeps it (``records.spec_to_json``/``spec_from_json``): dynamic
allocation, decided when the submission was checked, reads back as decided; a row written
before it was recorded gets it from the engine's rule on what the row keeps."""

from __future__ import annotations

import pytest

from sessionsched.model import AppSpec, Gang, GangStyle, Resources
from sessionsched.store.records import dynamic_before_recorded, spec_from_json, spec_to_json

NAMES = dict(app_id="a", queue="root.default", seq=1, submitted_at=0.0, priority=5000,
             name="n", user="u")


@pytest.mark.parametrize("dynamic", [True, False], ids=["on", "off"])
def test_dynamic_allocation_reads_back_as_decided(dynamic):
    spec = AppSpec(**NAMES, dynamic_allocation=dynamic)
    assert spec_from_json(spec_to_json(spec), **NAMES, unrecorded_dynamic=not dynamic) == spec


@pytest.mark.parametrize("gang", [None, Gang(4), Gang(2, 30.0, GangStyle.HARD)],
                         ids=["none", "soft default", "hard 30s"])
def test_a_gang_reads_back_as_submitted(gang):
    spec = AppSpec(**NAMES, gang=gang)
    assert spec_from_json(spec_to_json(spec), **NAMES).gang == gang


def test_a_row_from_before_gangs_has_none():
    older = {k: v for k, v in spec_to_json(AppSpec(**NAMES, gang=Gang(3))).items() if k != "gang"}
    assert spec_from_json(older, **NAMES).gang is None


OLDER_ROWS = [
    # name, kind, conf, argv -> dynamic allocation
    ("submit, unset: on", "submit", {}, ["app.py"], True),
    ("submit, off in conf", "submit", {"spark.dynamicAllocation.enabled": "false"}, ["app.py"],
     False),
    ("submit, off in argv wins over conf", "submit", {"spark.dynamicAllocation.enabled": "true"},
     ["--conf", "spark.dynamicAllocation.enabled=false", "app.py"], False),
    ("rest, unset: off", "rest", {}, [], False),
    ("rest, turned on", "rest", {"spark.dynamicAllocation.enabled": " TRUE "}, [], True),
    ("session, unset: on", "session", {}, [], True),
]


@pytest.mark.parametrize("kind,conf,argv,dynamic", [r[1:] for r in OLDER_ROWS],
                         ids=[r[0] for r in OLDER_ROWS])
def test_a_row_from_before_gets_the_engines_rule(kind, conf, argv, dynamic):
    assert dynamic_before_recorded(kind, conf, argv) is dynamic
    older = {k: v for k, v in spec_to_json(AppSpec(**NAMES)).items() if k != "dynamic_allocation"}
    back = spec_from_json(older, **NAMES, unrecorded_dynamic=dynamic)
    assert back.dynamic_allocation is dynamic


def test_the_store_reads_an_older_row_with_the_rule_and_a_new_row_as_recorded():
    from sessionsched.model.submission import Submission
    from sessionsched.store import StoredApp
    from sessionsched.store.schema import AppRow
    from sessionsched.store.store import _from_row, _to_row

    spec = AppSpec(**NAMES, dynamic_allocation=False)
    app = StoredApp(Submission(spec=spec, kind="submit", argv=("app.py",)))
    row = AppRow(**_to_row(app))
    assert _from_row(row).spec.dynamic_allocation is False  # as recorded
    row.spec = {k: v for k, v in row.spec.items() if k != "dynamic_allocation"}
    assert _from_row(row).spec.dynamic_allocation is True  # older: submit, unset -> on


@pytest.mark.parametrize("with_user,overhead", [(True, None), (False, None), (False, 512)],
                         ids=["notebook", "on the host", "on the host, overhead set"])
def test_where_the_driver_runs_and_its_overhead_read_back_as_submitted(with_user, overhead):
    spec = AppSpec(**NAMES, driver_with_user=with_user, driver_overhead_mib=overhead)
    assert spec_from_json(spec_to_json(spec), **NAMES, unrecorded_with_user=not with_user) == spec


def test_a_row_from_before_the_drivers_place_was_recorded_takes_it_from_its_kind():
    from sessionsched.model.submission import Submission
    from sessionsched.store import StoredApp
    from sessionsched.store.schema import AppRow
    from sessionsched.store.store import _from_row, _to_row

    for kind, with_user in (("session", True), ("connect", False), ("submit", False)):
        row = AppRow(**_to_row(StoredApp(Submission(spec=AppSpec(**NAMES), kind=kind))))
        row.spec = {k: v for k, v in row.spec.items()
                    if k not in ("driver_with_user", "driver_overhead_mib")}
        back = _from_row(row).spec
        assert (back.driver_with_user, back.driver_overhead_mib) == (with_user, None), kind


@pytest.mark.parametrize("driver, executor", [
    (Resources(1, 1024), Resources(2, 4096)),
    (Resources(1, 1024, (("gpu", 1),)), Resources(2, 4096, (("fpga", 1), ("gpu", 2)))),
], ids=["no custom resources", "gpus"])
def test_sizes_read_back_with_their_custom_resources(driver, executor):
    spec = AppSpec(**NAMES, driver=driver, executor=executor)
    data = spec_to_json(spec)
    assert spec_from_json(data, **NAMES) == spec
    # a row without custom resources is as it was before they were recorded
    assert ("custom" in data["executor"]) is bool(executor.custom)
