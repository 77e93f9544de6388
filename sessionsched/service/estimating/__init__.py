"""Estimated starts and counter-offers for the queued apps, refreshed in the background
(``refresher.Estimator``) from the live state (``live``) by the simulator run forward
(``sim.estimate``). docs/design/estimates.md says what is assumed."""

from sessionsched.service.estimating.refresher import Estimator

__all__ = ["Estimator"]
