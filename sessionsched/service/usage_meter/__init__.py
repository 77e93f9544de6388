"""Counting what each app uses, from the facts the cycle steps (docs/operator/usage.md): ``meter``
counts (``UsageMeter``), ``timing`` places a report's changes in time, ``thread`` counts
beside the cycle and writes (``MeterThread``)."""

from .meter import SUMMARY, HourKey, UsageMeter, live_figures, summary_line
from .thread import MeterThread, add_hours

__all__ = ["SUMMARY", "HourKey", "MeterThread", "UsageMeter", "add_hours", "live_figures",
           "summary_line"]
