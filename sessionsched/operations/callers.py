"""Where a caller's token comes from, in each door's way of sending it; who the token names is
``auth.Gate.identify``'s answer (through ``Operations.identify``).

- ``bearer``: ``Authorization: Bearer TOKEN`` (the native API, the agents, Spark REST);
- ``credentials``: Livy clients' ``Authorization: Basic base64(USER:TOKEN)`` (sparkmagic and
  Zeppelin send Basic auth) or a Bearer header;
- ``strip_token`` / ``strip_token_argv``: the ``spark.sessionsched.token`` property, taken out
  of a submission's properties or spark-submit arguments (unmodified spark-submit sends no
  header), so that it is never stored, launched, logged or shown.

Malformed headers raise ``auth.Unauthorized`` (401).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping

from sessionsched.operations.auth import Unauthorized

TOKEN_PROPERTY = "spark.sessionsched.token"


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header (None without one)."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise Unauthorized("the Authorization header must be 'Bearer TOKEN'")
    return value.strip()


def credentials(authorization: str | None) -> tuple[str | None, str | None]:
    """(the Basic auth user name or None, the token or None) of an ``Authorization`` header;
    ``Unauthorized`` for another scheme or a malformed header."""
    if not authorization:
        return None, None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "bearer":
        return None, bearer(authorization)
    if scheme.lower() != "basic":
        raise Unauthorized("the Authorization header must be 'Bearer TOKEN' or Basic auth "
                           "with the token as the password")
    try:
        text = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except ValueError:  # not base64 (binascii.Error), not ASCII, not UTF-8 once decoded
        raise Unauthorized("Basic auth: not base64 of 'user:password'") from None
    user, sep, password = text.partition(":")
    if not sep or not password:
        raise Unauthorized("Basic auth: the password must be a sessionsched token")
    return user or None, password


def strip_token(props: Mapping[str, str] | None) -> tuple[dict[str, str], str | None]:
    """(the properties without the token property, the token or None)."""
    props = dict(props or {})
    token = props.pop(TOKEN_PROPERTY, None)
    return props, (token.strip() or None) if isinstance(token, str) else None


def strip_token_argv(argv: list[str]) -> list[str]:
    """spark-submit arguments without ``--conf spark.sessionsched.token=...``."""
    out: list[str] = []
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg in ("--conf", "-c") and i + 1 < len(argv) and \
                argv[i + 1].startswith(TOKEN_PROPERTY + "="):
            skip = True
            continue
        if arg.startswith("--conf=" + TOKEN_PROPERTY + "="):
            continue
        out.append(arg)
    return out
