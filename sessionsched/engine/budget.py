"""The work one scheduling step may do: bounded, so that no cycle is long.

A step's cost is about the number of apps it changes (``scheduler``'s cost note). Two things
can make that number large at once: a burst of submissions handed to one step, and a burst of
admissions (every queued app that fits, at once). Each is given a slice per step, and what is
left continues at the next step, in the same order:

  * ``admit``: at most this many drivers are launched per step. Admission walks the queues in
    its fair order (``admission.plan_admissions``) and stops when the slice is used; the queues
    it did not reach wait with the reason ``ADMISSION_SLICE`` and are taken first at the next
    step by the same walk, so apps are admitted in the same rank order as without a slice,
    none is lost, and nothing waits on anything but the next step (``Scheduler.next_wakeup``
    says "now" while a slice is left). The slice's *cost*: a burst of B admissible apps takes
    ceil(B / admit) steps, so its last app is launched up to (ceil(B / admit) - 1) cycles later
    than with no slice: at the default 200 and the server's 200 ms cycle, 10,000 apps that may
    all start at once are launched within 10 s (50 cycles), 1,000 a second; in the simulator
    (1 s cycles) within 49 s. A burst of up to 200 is not delayed at all. Why 200: admitting
    and placing one app costs about 0.1 ms of a step at 10,000 running apps on this project's
    2-core machine (``benchmarks/simulate_scale.py``), so a full slice stays near 20 ms, beside
    the cluster's report of the apps launched by earlier slices, under the 100 ms a cycle may
    take.
  * ``events``: at most this many events are handed to one step by the engine's drivers (the
    server's inbox, the simulator's submissions and priority updates). The rest wait, in
    order, for the next step, so an event never overtakes one before it (a priority change
    always comes after its app's submission). The cluster's own report of a cycle (executors,
    exits) is always handed over whole: it is bounded by the apps running. At the default
    1,000 (about 10 ms of submissions), the server takes 5,000 events a second, far above the
    rate its store commits submissions at; the simulator hands a burst of 20,000 submissions
    over in 20 cycles.

Counted in apps and events, never in wall-clock time: the same events still give the same
decisions, on any machine (the engine reads no clock).
"""

from __future__ import annotations

from dataclasses import dataclass

from .waits import Wait, WaitCode

ADMISSION_SLICE = "waits for the next cycle: this cycle admitted its slice of {n} apps"


def admission_slice(n: int) -> Wait:
    """The wait of a queue the walk did not reach because the slice of ``n`` was used."""
    return Wait(WaitCode.ADMISSION_SLICE, ADMISSION_SLICE.format(n=n))


@dataclass(frozen=True)
class CycleBudget:
    """Per-step slices (module doc). ``None``: unbounded (tests of the unsliced behaviour)."""

    admit: int | None = 200
    events: int | None = 1000

    def __post_init__(self) -> None:
        for name in ("admit", "events"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"CycleBudget.{name} must be at least 1, not {value}")


DEFAULT = CycleBudget()
UNBOUNDED = CycleBudget(admit=None, events=None)
