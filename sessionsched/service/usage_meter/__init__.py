"""Counting what each app uses, from the facts the cycle steps (docs/operator/usage.md): ``meter``
counts (``UsageMeter``), ``timing`` places a report's changes in time, ``thread`` counts
beside the cycle and writes (``MeterThread``)."""

from .figures import SUMMARY, live_figures, summary_line
from .meter import RES_COUNTED, HourKey, ResHourKey, UsageMeter
from .thread import MeterThread, add_hours

__all__ = ["RES_COUNTED", "SUMMARY", "HourKey", "MeterThread", "ResHourKey", "UsageMeter",
           "add_hours", "live_figures", "summary_line"]
