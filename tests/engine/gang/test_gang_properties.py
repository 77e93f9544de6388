"""Gangs over random queue trees and random histories (hypothesis, ``test_properties``'s
strategies and cluster), some submissions gangs of 1-4 executors with short timeouts:

- every invariant of ``test_properties.check_invariants`` still holds (targets and grants
  within the capacity and caps, the books equal to a recount, targets equal to the
  from-scratch arbiter's on the capacity the gangs leave);
- FIFO-ordered reservation: at most one reservation is partial (neither empty nor whole);
- a reservation never shrinks while its gang keeps reserving;
- a launched gang's floor is at least its N (capped by what it may hold), and its launch
  terms say N.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import event, given
from hypothesis import strategies as st

from sessionsched.engine import LaunchDriver, Scheduler, Submitted
from sessionsched.model import Gang, GangStyle, Resources
from tests.engine.test_properties import (
    FAST,
    Cluster,
    action,
    capacity_action,
    check_invariants,
    histories,
    trees,
)

gangs = st.lists(
    st.one_of(st.none(), st.none(),
              st.builds(Gang, executors=st.integers(1, 4),
                        timeout_s=st.sampled_from([5.0, 12.0, 900.0]),
                        style=st.sampled_from(list(GangStyle)))),
    max_size=40)


class GangCluster(Cluster):
    """``Cluster`` whose n-th submission is ``gangs[n]``'s gang, if any (at most what the app
    may hold, as intake refuses more)."""

    gangs: list = []

    def events_for(self, act: tuple) -> list:
        events = super().events_for(act)
        if act[0] == "submit":
            n = len(self.ids) - 1
            gang = self.gangs[n] if n < len(self.gangs) else None
            spec = events[0].spec
            cap = spec.executor_cap
            if gang is not None and (cap is None or cap >= 1):
                gang = replace(gang, executors=min(gang.executors, cap or gang.executors))
                events[0] = Submitted(replace(spec, gang=gang))
        return events


def check_gangs(cluster: GangCluster, before: dict) -> None:
    check_invariants(cluster)
    sched = cluster.sched
    view = sched.view()
    partial = [a for a, r in view.reservations.items()
               if r.held != Resources() and not r.needed.fits_in(r.held)]
    assert len(partial) <= 1, view.reservations
    for a, r in view.reservations.items():
        if a in before:
            assert before[a].cores <= r.held.cores and before[a].mem_mib <= r.held.mem_mib
    for d in cluster.log[-1]:
        if isinstance(d, LaunchDriver):
            spec = sched.apps[d.app_id].spec
            assert d.terms.gang_executors == (None if spec.gang is None else spec.gang.executors)
    for r in sched.apps.values():
        if r.state.admitted and r.spec.gang is not None:
            cap = r.spec.executor_cap
            assert r.floor >= (r.spec.gang.executors if cap is None
                               else min(r.spec.gang.executors, cap))


@FAST
@given(
    root=trees(),
    cores=st.integers(0, 40),
    mem_gib=st.integers(1, 64),
    slots=st.integers(0, 6),
    history=histories(action, capacity_action),
    gang_list=gangs,
)
def test_gangs_keep_every_invariant_and_reserve_in_fifo_order(root, cores, mem_gib, slots,
                                                              history, gang_list):
    sched = Scheduler(root, Resources(cores, mem_gib * 1024), slots)
    cluster = GangCluster(root, sched)
    cluster.gangs = gang_list
    before: dict = {}
    seen = set()
    for act in history:
        cluster.step(cluster.events_for(act))
        check_gangs(cluster, before)
        before = {a: r.held for a, r in sched.view().reservations.items()}
        if any(h != Resources() for h in before.values()):
            seen.add("a gang held room")
        if any(d.terms.gang_executors for d in cluster.log[-1] if isinstance(d, LaunchDriver)):
            seen.add("a gang launched")
        seen.update(m.reason.split(":")[0] for d in cluster.log[-1] for m in [d]
                    if getattr(d, "reason", "").startswith("gang of"))
    for what in sorted(seen):  # shown by --hypothesis-show-statistics: what was exercised
        event(what)
