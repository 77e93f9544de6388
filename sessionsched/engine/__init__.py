"""The scheduling engine: pure, deterministic, events in and decisions out."""

from .events import *  # noqa: F401,F403 - the engine's vocabulary
from .scheduler import AppRecord, Scheduler  # noqa: F401
from .validate import EventError  # noqa: F401
