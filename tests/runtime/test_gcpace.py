"""GcPacer: a full collection slower than the budget freezes its survivors."""

from __future__ import annotations

import gc
import sys
import threading
import weakref

import pytest

from sessionsched.runtime import gc_pacer
from sessionsched.runtime.gc_pacer import GcPacer


class Node:
    """A tracked object that can be part of a reference cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def pacer_of():
    made: list[GcPacer] = []

    def make(budget_ms: float) -> GcPacer:
        pacer = GcPacer(budget_ms).install()
        made.append(pacer)
        return pacer

    gc.collect()
    gc.unfreeze()
    yield make
    for pacer in made:
        pacer.uninstall()
    gc.unfreeze()  # the rest of the suite runs with nothing frozen


def books(n: int) -> list[Node]:
    return [Node() for _ in range(n)]


@pytest.mark.parametrize(
    ("budget_ms", "frozen"),
    [(0.0, True), (60_000.0, False)],
    ids=["a pass slower than the budget freezes the survivors",
         "a pass within the budget freezes nothing"],
)
def test_full_pass_against_budget(pacer_of, budget_ms, frozen):
    live = books(50_000)
    pacer = pacer_of(budget_ms)
    gc.collect()
    assert pacer.slowest_ms > 0
    assert pacer.freezes == (1 if frozen else 0)
    # The frozen generation holds the books (and whatever else was alive), else nothing.
    assert (gc.get_freeze_count() >= len(live)) is frozen
    assert pacer.uninstall() is None and pacer._callback not in gc.callbacks


def test_young_passes_never_freeze(pacer_of):
    pacer = pacer_of(0.0)
    books(10_000)
    gc.collect(0)
    gc.collect(1)
    assert pacer.freezes == 0
    assert gc.get_freeze_count() == 0


def test_garbage_is_collected_before_the_freeze(pacer_of):
    """The freeze follows the pass: a cycle that was garbage then is gone, not kept."""
    pacer = pacer_of(0.0)
    a, b = Node(), Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b
    gc.collect()
    assert pacer.freezes == 1
    assert gone() is None


def test_settle_freezes_what_is_alive(pacer_of):
    pacer = pacer_of(60_000.0)
    live = books(20_000)
    pacer.settle()
    assert pacer.freezes == 1
    assert gc.get_freeze_count() >= len(live)
    # Frozen objects are still freed by reference counting.
    probe = weakref.ref(live[0])
    del live
    assert probe() is None


def test_as_a_context_it_leaves_the_process_as_found(pacer_of):
    with GcPacer(0.0) as pacer:
        live = books(20_000)
        gc.collect()
        assert pacer.freezes == 1 and gc.get_freeze_count() >= len(live)
    assert pacer._callback not in gc.callbacks
    assert gc.get_freeze_count() == 0


def promoted(n: int) -> list[Node]:
    """``n`` live objects moved into the oldest generation (as generation-1 passes do)."""
    live = books(n)
    gc.collect(1)
    return live


def test_between_cycles_collects_a_grown_oldest_generation(pacer_of):
    pacer = pacer_of(60_000.0)
    pacer.max_old = 1_000
    live = promoted(5_000)
    assert len(gc.get_objects(generation=2)) > pacer.max_old
    gc_pacer.between_cycles()  # the module's hook reaches the installed pacer
    assert pacer.freezes == 1
    assert gc.get_freeze_count() >= len(live)
    assert len(gc.get_objects(generation=2)) == 0


def test_between_cycles_leaves_a_small_oldest_generation(pacer_of):
    pacer = pacer_of(60_000.0)
    pacer.max_old = 10_000_000
    promoted(5_000)
    gc_pacer.between_cycles()
    assert pacer.freezes == 0 and gc.get_freeze_count() == 0


def test_between_cycles_looks_again_only_after_a_young_pass(pacer_of):
    pacer = pacer_of(60_000.0)
    pacer.max_old = 10_000_000
    promoted(5_000)
    gc.disable()  # no automatic pass between the two looks
    try:
        pacer.between_cycles()
        pacer.max_old = 0
        pacer.between_cycles()  # nothing moved into the oldest generation since the last look
        assert pacer.freezes == 0
        gc.collect(1)
        pacer.between_cycles()
        assert pacer.freezes == 1
    finally:
        gc.enable()


def test_between_cycles_without_a_pacer_does_nothing(pacer_of):
    pacer = pacer_of(60_000.0)
    pacer.max_old = 0
    pacer.uninstall()
    promoted(5_000)
    gc_pacer.between_cycles()
    assert pacer.freezes == 0 and gc.get_freeze_count() == 0


def test_counting_the_oldest_generation_never_shows_a_tuple_being_built_to_another_thread():
    """A thread fills a tuple from a generator; mid-way a full collection moves the tuple being
    built into the oldest generation, and the builder waits while another thread counts that
    generation. Any Python-level moment the counting list is alive (here: the profiler's
    ``c_return`` of ``gc.get_objects``, where a thread switch could come) lets the builder go
    on and finish: with the list holding a second reference, its tuple cannot grow."""
    paused, resume, seen = threading.Event(), threading.Event(), []

    def items():
        for i in range(100):
            if i == 50:
                gc.collect()
                paused.set()
                assert resume.wait(30), "the counting thread never let the builder go on"
            yield i

    def let_the_builder_on(frame, event, arg):
        if event == "c_return" and arg is gc.get_objects:
            seen.append(event)
            resume.set()
            finished.wait(30)

    finished = threading.Event()
    built: list = []

    def build():
        try:
            built.append(tuple(items()))
        except SystemError as e:  # the failure this guards against
            built.append(e)
        finished.set()

    builder = threading.Thread(target=build)
    builder.start()
    assert paused.wait(30)
    sys.setprofile(let_the_builder_on)
    try:
        n = gc_pacer.oldest_count()
    finally:
        sys.setprofile(None)
    resume.set()
    builder.join(30)
    assert built == [tuple(range(100))]
    assert n > 0 and seen == [], "the count's list was alive at a Python-level moment"
