"""The step's gang phase (``Scheduler.step``, after the timeouts, before admission): gangs
whose timeout ran out are dealt with by their style, then the gangs at their queues' heads
reserve what is free (``book.GangBook``, docs/design/gangs.md)."""

from __future__ import annotations

from collections.abc import Container
from dataclasses import replace

from ...model import AppSpec, AppState, GangStyle, Resources
from ..events import Decision
from ..placement import held_now
from .book import fell_back_reason, timed_out_reason


def gang_phase(books, capacity: Resources, now: float, out: list[Decision],
               aside: Container[str] = ()) -> None:
    """``books``: the engine's ``app_books.Books``, in sync; ``capacity``: the cluster's;
    ``aside``: the apps admission held aside ``does_not_fit_now`` at the last step."""
    gangs = books.gangs
    for hold in gangs.expired(now):
        rec = books.apps.get(hold.spec.app_id)
        if rec is None or rec.state is not AppState.ACCEPTED:
            continue
        if hold.spec.gang.style is GangStyle.HARD:
            books.unqueue(rec)
            out.append(books.mark(now, rec, AppState.FAILED, timed_out_reason(hold)))
        else:
            rec.spec = replace(rec.spec, gang=None)  # an ordinary app from now on
            rec.reason = fell_back_reason(hold)
            books.requeue(rec, rec.priority)  # in its place again: its queue's head looked at
    heads = _gang_heads(books, aside)
    if not heads and not gangs.holds:
        return
    t = books.ledger.total
    free = capacity - Resources(t.driver_cores + t.committed_cores,
                                t.driver_mem_mib + t.committed_mem_mib)
    gangs.reserve(now, heads, free)


def _gang_heads(books, aside: Container[str]) -> list[AppSpec]:
    """Each leaf's head (its first queued app not held aside ``does_not_fit_now``) that is a
    gang, in rank order. Held aside is what the last step's admission found (``aside``), and
    for a gang what the cluster says now. A cycle with no gang queued costs nothing."""
    if not books.queued_gangs:
        return []
    out = []
    workers = books.workers
    for leaf, pend in books.pending.items():
        if not pend:
            continue
        key = pend[0]  # the head, without an iterator per leaf: it is rarely held aside
        if key[2] not in aside:
            spec = books.apps[key[2]].spec
            if spec.gang is None:
                continue
            if held_now(spec, books.tree.path[leaf], workers) is None:
                out.append((key, spec))
                continue
        for key in pend:  # the head is held aside: the first app after it that is not
            if key[2] in aside:
                continue
            spec = books.apps[key[2]].spec
            if spec.gang is not None:
                if held_now(spec, books.tree.path[leaf], workers) is not None:
                    continue
                out.append((key, spec))
            break
    return [spec for _key, spec in sorted(out, key=lambda kv: kv[0])]
