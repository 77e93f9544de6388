"""NeedBook: the answers kept per leaf (``need_at_or_above``, ``weight_at_or_above``) equal a
sum over the book whatever was asked before and whatever changed since."""

import random

import pytest
from engine_builders import app

from sessionsched.engine.ledger import AppRecord
from sessionsched.engine.needs import NeedBook, elastic_need
from sessionsched.model import AppState, Resources
from sessionsched.model.custom import combine

LEAVES = ["root.a", "root.b"]


def by_scan(recs, leaf, priority):
    needs = [(elastic_need(r), r.priority) for r in recs
             if r.spec.queue == leaf and r.priority >= priority]
    needs = [(n, p) for n, p in needs if n[0] or n[1] or n[2]]
    custom = ()
    for n, _ in needs:
        custom = combine(custom, n[2], 1)
    return (Resources(sum(n[0] for n, _ in needs), sum(n[1] for n, _ in needs), custom),
            sum(p for _, p in needs))


@pytest.mark.parametrize("seed", range(20), ids=[f"random history {s}" for s in range(20)])
def test_kept_answers_equal_a_scan_of_the_book(seed):
    rnd = random.Random(seed)
    book = NeedBook()
    recs: dict[str, AppRecord] = {}
    for i in range(300):
        op = rnd.random()
        if op < 0.4 or not recs:  # a new app, or one of them changes
            gpus = rnd.choice(((), (), (("gpu", 1),), (("fpga", 1), ("gpu", 2))))
            spec = (app(f"app{i}").queue(rnd.choice(LEAVES))
                    .executor(rnd.choice((1, 2)), 1024, gpus).max(rnd.choice((2, 4))).spec())
            rec = recs[spec.app_id] = AppRecord(spec, priority=rnd.choice((1, 10, 20, 30, 40)))
        else:
            rec = recs[rnd.choice(sorted(recs))]
        rec.state = rnd.choice((AppState.ACCEPTED, AppState.STARTING, AppState.RUNNING,
                                AppState.FINISHED))
        rec.demand = rnd.randint(0, 5)
        if rnd.random() < 0.3:
            rec.priority = rnd.choice((1, 10, 20, 30, 40))
        book.refresh(rec)
        for _ in range(rnd.randint(0, 3)):
            leaf, priority = rnd.choice(LEAVES), rnd.choice((0, 10, 15, 30, 50))
            need, weight = by_scan(recs.values(), leaf, priority)
            assert book.need_at_or_above(leaf, priority) == need
            assert book.weight_at_or_above(leaf, priority) == weight
        assert book.check() == []
