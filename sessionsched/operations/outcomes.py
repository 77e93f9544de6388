"""What an operation of the port ended in, as a value every door translates into its own
dialect (the native one-line ``{"detail": ...}``, Spark's ``ErrorResponse``, Livy's
``{"msg": ...}``).

``Outcome.kind`` is one of ``Kind``; ``message`` is one line naming the problem, ``value`` what
a done operation gives back (the stored app, the app as read, a reply). A refused outcome
carries the HTTP status its limit names (``guard.Refused``: 400, 403 for a path outside
``auth.allowed_paths``, 413, 429; an upload's 400/413/507) and, for the rate limit, when to
retry.

``waited``: a service future awaited with a timeout, its exceptions made outcomes — the one
place any door waits for the scheduler.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar

from sessionsched.intake.guard import Refused
from sessionsched.intake.new_apps import SubmissionError
from sessionsched.model.text import one_line
from sessionsched.operations.auth import Forbidden
from sessionsched.service.reads import NotFound
from sessionsched.service.service import Conflict
from sessionsched.store import StoreUnavailable

T = TypeVar("T")


class Kind(str, Enum):
    DONE = "done"
    NOT_FOUND = "not found"  # no such app (or no log of it)
    CONFLICT = "conflict"  # the app's state does not allow it (ended; not a session)
    UNAUTHORIZED = "unauthorized"  # no, a wrong or a revoked token
    FORBIDDEN = "forbidden"  # a known caller a rule refuses (the message names the rule)
    INVALID = "invalid"  # a request that does not check out (a submission, a queue name)
    REFUSED = "refused"  # a submission or upload a check or a limit refuses (``status``)
    OVERLOADED = "overloaded"  # the scheduler did not confirm within the wait
    UNAVAILABLE = "unavailable"  # not stored: the store is unreachable, or the write failed


@dataclass(frozen=True)
class Outcome(Generic[T]):
    kind: Kind
    value: T | None = None
    message: str = ""
    status: int | None = None  # REFUSED: the HTTP status the refusal names
    retry_after: int | None = None  # REFUSED by the rate limit: seconds

    @property
    def ok(self) -> bool:
        return self.kind is Kind.DONE


def done(value: Any = None) -> Outcome:
    return Outcome(Kind.DONE, value)


def failed(kind: Kind, message: str, status: int | None = None,
           retry_after: int | None = None) -> Outcome:
    return Outcome(kind, None, one_line(message), status, retry_after)


def of_service_error(e: Exception) -> Outcome | None:
    """A service refusal as an outcome; None for anything else."""
    if isinstance(e, NotFound):
        return failed(Kind.NOT_FOUND, str(e))
    if isinstance(e, Conflict):
        return failed(Kind.CONFLICT, str(e))
    if isinstance(e, StoreUnavailable):
        return failed(Kind.UNAVAILABLE, str(e))
    return None


def service_refusal(e: Exception) -> Outcome:
    """A service refusal raised by a call as an outcome; anything else (a bug) raised on."""
    out = of_service_error(e)
    if out is None:
        raise e
    return out


async def waited(future: Future, timeout_s: float, what: str) -> Outcome:
    """The future's result as ``done``, or what stopped it: not found, conflict, the store
    unavailable (``UNAVAILABLE``, any other error too: not stored), or no answer within
    ``timeout_s`` (``OVERLOADED``: the request is queued, not lost)."""
    try:
        return done(await asyncio.wait_for(asyncio.wrap_future(future), timeout_s))
    except asyncio.TimeoutError:
        return failed(Kind.OVERLOADED, f"{what} not confirmed within {timeout_s:g}s; "
                                       "the scheduler is overloaded, try again")
    except Exception as e:  # noqa: BLE001 - every failure is an answer, never a 500 page
        return of_service_error(e) or failed(Kind.UNAVAILABLE, str(e))


# What a submission's checks raise (``new_apps``, the gate's rules, the caps and rate limit),
# and what each is as an outcome: one mapping for submissions and dry runs alike.
CHECKS_FAIL = (SubmissionError, Forbidden, Refused)


def check_failed(e: Exception) -> Outcome:
    if isinstance(e, SubmissionError):
        return failed(Kind.INVALID, str(e))
    if isinstance(e, Forbidden):
        return failed(Kind.FORBIDDEN, str(e))
    assert isinstance(e, Refused)
    return failed(Kind.REFUSED, str(e), e.status, e.retry_after)
