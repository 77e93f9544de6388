"""Placement: where a driver or an executor can run. Fit is a per-worker question.

``workers.Workers``: the cluster's workers grouped by size, answering how many executors of a
size the workers hold (the sum over workers of what each holds) and whether anything fits one
worker, memoised by size. ``never_fits.never_fits``: the one function that decides whether an
app can run on the cluster as it is (submission refuses it; admission holds a queued one with
``does_not_fit_now`` and lets the apps behind it go ahead). ``sorting``: node sorting
(``fair``, ``binpacking``), which worker a driver or an executor goes to. ``free_now``: each
worker's free room now (the backend's last report less what the engine launched since),
asked of a driver that must find room now. ``profiles``: an app's executors split over its
stage-level resource profiles, each placed and counted by its own shape.
"""

from .free_now import FreeNow, WorkerReports
from .never_fits import held_now, never_fits
from .workers import Workers

__all__ = ["FreeNow", "WorkerReports", "Workers", "held_now", "never_fits"]
