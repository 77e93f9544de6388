"""Estimated starts and counter-offers for the queued apps, refreshed in the background
(``refresher.Estimator``) from the live state (``live``) by the simulator run forward
(``sim.estimate``), with the running apps' stages as reported (``progress``).
docs/design/estimates.md says what is assumed."""

from sessionsched.service.estimating.progress import ProgressBook
from sessionsched.service.estimating.refresher import Estimator

__all__ = ["Estimator", "ProgressBook"]
