"""What a reserving gang holds, as outsiders read it (``EngineView.reservation``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...model import Resources


@dataclass(frozen=True, slots=True)
class Reservation:
    """A gang's reservation: ``held`` of the ``needed`` room (its driver, if it runs in the
    cluster, and its N executors) set aside for it; ``since`` the first reserved core (its
    timeout's start); ``deadline`` when its timeout runs out (``since`` + the gang's timeout).
    While nothing is held yet its clock has not started: ``since`` and ``deadline`` are 0.0
    (``started`` is False)."""

    held: Resources
    needed: Resources
    since: float
    deadline: float

    @property
    def started(self) -> bool:
        """Its timeout's clock runs (some room is held, or was)."""
        return self.deadline > 0.0
