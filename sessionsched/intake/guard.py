"""Hostile input, refused before anything is stored or launched (docs/operator/serving-a-team.md,
"Limits").

- ``check_submission``: every string of a checked submission at most ``auth.max_string``
  characters (its user at most ``USER_MAX``, what a store row holds), without a NUL
  character or a lone surrogate, and at most ``MAX_ITEMS`` arguments/properties/variables;
  environment variables only from ``auth.env_allow`` (``LD_PRELOAD`` or
  ``PYSPARK_DRIVER_PYTHON`` would change what the driver runs); a client-mode driver's
  application file inside ``auth.allowed_paths`` when that is set;
- ``RateLimit``: submissions per user per minute (429 with ``Retry-After``).

The request body limit applied to every door is ``doors/common/asgi.BodyLimit``; the token
property taken out of a submission, ``operations/callers.strip_token``.

Every refusal is a ``Refused`` with one line naming the problem.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path

from sessionsched.config import AuthSection
from sessionsched.model.submission import AppKind, Submission
from sessionsched.spark.submit_args import SparkArgsError, parse_spark_submit
from sessionsched.store.schema import USER_MAX

MAX_ITEMS = 1000


class Refused(ValueError):
    """A submission refused by a limit; ``status`` is the HTTP status."""

    def __init__(self, message: str, status: int = 400, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


def _check_strings(what: str, values, limit: int) -> None:
    values = list(values)
    if len(values) > MAX_ITEMS:
        raise Refused(f"{what}: {len(values)} items, at most {MAX_ITEMS}")
    for v in values:
        if not isinstance(v, str):
            continue
        if len(v) > limit:
            raise Refused(f"{what}: a value of {len(v)} characters, at most {limit} "
                          f"(it starts {v[:40]!r})")
        # Neither goes into a driver's arguments or environment, nor into a UTF-8 store row.
        if "\x00" in v:
            raise Refused(f"{what}: a value with a NUL character ({v[:40]!r})")
        if not v.isascii():
            try:
                v.encode()
            except UnicodeEncodeError as e:
                raise Refused(f"{what}: a value with a lone surrogate {v[e.start]!r}, not "
                              f"Unicode text ({v[:40]!r})") from None


def check_submission(app: Submission, auth: AuthSection, uploads_root: str | None = None) -> None:
    """Refused if the app breaks a limit or the environment allowlist (see the module doc).
    ``uploads_root``: where uploaded files are stored, allowed whatever ``allowed_paths`` says
    (a remote submission's application file is there)."""
    limit = auth.max_string
    _check_strings("name", [app.name], limit)
    _check_strings("argv", app.argv, limit)
    _check_strings("conf", [*app.conf.keys(), *app.conf.values()], limit)
    _check_strings("cwd", [app.cwd or ""], limit)
    env = dict(app.env)
    if app.rest_request is not None:
        req = app.rest_request
        env.update(req.get("environmentVariables") or {})
        _check_strings("appArgs", req.get("appArgs") or [], limit)
        _check_strings("appResource", [req.get("appResource") or ""], limit)
        _check_strings("mainClass", [req.get("mainClass") or ""], limit)
    _check_strings("environment", [*env.keys(), *env.values()], limit)
    if len(app.user) > USER_MAX:
        raise Refused(f"user: a name of {len(app.user)} characters, at most {USER_MAX} "
                      f"(it starts {app.user[:40]!r})")
    if not app.user.isprintable():  # a newline in it would forge a line of the audit log
        raise Refused(f"user: a name with a control character ({app.user[:40]!r})")
    refused = sorted(k for k in env if not any(fnmatchcase(k, p) for p in auth.env_allow))
    if refused:
        raise Refused(f"environment variable {refused[0]} may not be passed to a driver "
                      f"(auth.env_allow: {', '.join(auth.env_allow) or 'none'})")
    if auth.allowed_paths is not None and app.kind == AppKind.SUBMIT:
        _check_path(app, auth.allowed_paths, uploads_root)


def _check_path(app: Submission, allowed: list[str], uploads_root: str | None) -> None:
    try:
        resource = parse_spark_submit(list(app.argv)).app_file
    except SparkArgsError:
        return  # from_argv has refused it already
    if resource is None or (":" in resource.split("/", 1)[0] and
                            not resource.startswith("file:")):
        return  # a URI the cluster fetches
    path = Path(app.cwd or "/", resource.removeprefix("file://").removeprefix("file:"))
    real = os.path.realpath(path)
    for root in [*allowed, *([uploads_root] if uploads_root else [])]:
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip("/") + "/"):
            return
    raise Refused(f"application file {real} is outside auth.allowed_paths "
                  f"({', '.join(allowed)})", 403)


class RateLimit:
    """At most ``per_minute`` submissions per user in any 60 s (0: no limit)."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic):
        self.per_minute = per_minute
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, deque[float]] = {}

    def take(self, user: str) -> None:
        if self.per_minute <= 0:
            return
        now = self._clock()
        with self._lock:
            times = self._seen.setdefault(user, deque())
            while times and times[0] <= now - 60.0:
                times.popleft()
            if len(times) >= self.per_minute:
                wait = max(1, int(times[0] + 60.0 - now + 0.999))
                raise Refused(f"user {user} submitted {self.per_minute} apps in the last minute "
                              f"(auth.submissions_per_minute); retry in {wait}s", 429, wait)
            times.append(now)
