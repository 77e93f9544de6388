"""What a client call can fail with: ``SchedulerError``, whose ``str()`` is one line for a
user -- ``Unreachable`` (no server there), ``ApiError`` (the server refused: its ``detail``)."""

from __future__ import annotations


class SchedulerError(Exception):
    """The scheduler could not do what was asked. ``str()`` is one line for a user."""


class Unreachable(SchedulerError):
    def __init__(self, server: str, why: str):
        super().__init__(f"cannot reach the scheduler at {server} ({why})")
        self.server = server
        self.why = why


class ApiError(SchedulerError):
    """A 4xx/5xx answer; ``detail`` is the server's one-line reason."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail
