"""Ends the scheduler decides itself and its doors tell apart: the reason an app ends with
says which, by its first words, so a door can tell its client what happened and what to do.

``released_idle``: an idle Livy or Connect session whose driver on the scheduler's host was
stopped so that apps waiting for the host's room could start (its queue's
``release_idle_sessions_after``, ``engine.host_room.idle_to_release``).
"""

from __future__ import annotations

RELEASE_SETTING = "release_idle_sessions_after"  # the queue setting, as the config names it
RELEASED_IDLE = "released idle"  # the first words of a released session's reason


def released_idle(idle_s: float, after_s: float, queue: str, waiting_app: str) -> str:
    """The reason a released session ends with."""
    return (f"{RELEASED_IDLE} so that waiting apps could start: the session ran no job and"
            f" held no executor for {idle_s:.0f}s, past queue {queue}'s {RELEASE_SETTING} of"
            f" {after_s:g}s, while {waiting_app} waited for room on the scheduler's host;"
            " the session's state is lost")


def was_released_idle(reason: str | None) -> bool:
    return bool(reason) and reason.startswith(RELEASED_IDLE)
