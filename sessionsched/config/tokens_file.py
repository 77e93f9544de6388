"""The tokens file: who may use the scheduler, as bearer tokens stored only as hashes.

A token is ``ss_`` + 32 random bytes (``secrets.token_urlsafe``); the file keeps its SHA-256
(a fast hash is right for a high-entropy secret: there is nothing to guess), the user it names,
the role (``user`` or ``admin``), a short id for ``token list``/``token revoke`` and the time it
was made. The file is JSON, written atomically with mode 0600; the token itself is shown once,
by ``sessionsched token create``, and kept nowhere.

``TokenBook`` is the server's side: it checks a presented token against the file, re-reading
the file whenever its modification time or size changes, so a revoked token stops working at
its next request without a restart.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger("sessionsched.auth")

ROLES = ("user", "admin")
PREFIX = "ss_"
_USER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")


class TokenFileError(ValueError):
    """A tokens file that cannot be read or written; ``str()`` is one line."""


@dataclass(frozen=True)
class TokenEntry:
    id: str  # the first 12 hex digits of the hash: names a token without revealing it
    user: str
    role: str
    sha256: str
    created: float


_FIELDS = tuple(TokenEntry.__dataclass_fields__)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def check_user(user: str) -> str:
    """A user name: letters, digits and ``._@-``, at most 64 (it appears in log lines)."""
    if not _USER.match(user):
        raise TokenFileError(f"user name {user!r} must be 1-64 letters, digits or ._@- "
                             "(starting with a letter or digit)")
    return user


def read_entries(path: str | Path) -> list[TokenEntry]:
    """The file's tokens; a missing file has none."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        return []
    except OSError as e:
        raise TokenFileError(f"{p}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise TokenFileError(f"{p}: not a sessionsched tokens file (byte {e.start} does not "
                             "decode as UTF-8)") from None
    try:
        data = json.loads(text) if text.strip() else {"tokens": []}
        if not isinstance(data, dict) or not isinstance(data.get("tokens"), list):
            raise ValueError('expected {"tokens": [...]}')
        return [_entry(row) for row in data["tokens"]]
    except (ValueError, KeyError, TypeError) as e:
        raise TokenFileError(f"{p}: not a sessionsched tokens file ({e})") from None


def _entry(row: dict) -> TokenEntry:
    """A row of the file, its fields of their types: a file edited by hand with a null id or a
    created of "x" would otherwise fail later, in ``token list`` or at a request."""
    if not isinstance(row, dict):
        raise ValueError(f"a token is a map of id, user, role, sha256, created; not {row!r}")
    missing = [f for f in _FIELDS if f not in row]
    unknown = [f for f in row if f not in _FIELDS]
    if missing or unknown:
        raise ValueError(f"a token has the fields {', '.join(_FIELDS)}; "
                         + (f"{row.get('id', 'one')!r} lacks {', '.join(missing)}" if missing
                            else f"{', '.join(map(repr, unknown))} is not one of them"))
    entry = TokenEntry(**row)
    for name in ("id", "user", "role", "sha256"):
        if not isinstance(getattr(entry, name), str):
            raise ValueError(f"{name} {getattr(entry, name)!r} is not a string")
    created = entry.created
    if isinstance(created, bool) or not isinstance(created, int | float) or not (
            0 <= created < 2**32):  # seconds since 1970, as time.time() wrote it
        raise ValueError(f"created {created!r} is not a time in seconds")
    return entry


def write_entries(path: str | Path, entries: list[TokenEntry]) -> None:
    """Replace the file atomically (a reader sees the old or the new one), mode 0600."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"tokens": [asdict(e) for e in entries]}, f, indent=1)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def create(path: str | Path, user: str, role: str) -> str:
    """A new token for ``user`` with ``role``, its hash added to the file; returns the token."""
    if role not in ROLES:
        raise TokenFileError(f"role {role!r} is not one of {', '.join(ROLES)}")
    check_user(user)
    entries = read_entries(path)
    token = PREFIX + secrets.token_urlsafe(32)
    digest = hash_token(token)
    entries.append(TokenEntry(id=digest[:12], user=user, role=role, sha256=digest,
                              created=time.time()))
    write_entries(path, entries)
    return token


def revoke(path: str | Path, token_id: str | None = None, user: str | None = None) -> int:
    """Remove the token with this id, or every token of this user; how many were removed."""
    entries = read_entries(path)
    kept = [e for e in entries
            if not ((token_id and e.id == token_id) or (user and e.user == user))]
    removed = len(entries) - len(kept)
    if removed:
        write_entries(path, kept)
    return removed


class TokenBook:
    """Looks tokens up in the file, re-read when it changes (thread-safe)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._entries: list[TokenEntry] = []
        self._load()  # a broken file stops the server at start, with the file's problem
        if not self._entries:
            log.warning("tokens file %s has no tokens (yet): every token is refused; make one "
                        "with 'sessionsched token create --file %s ...'", self.path, self.path)

    def _load(self) -> None:
        try:
            st = self.path.stat()
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = (0, 0, 0)
        if stamp == self._stamp:
            return
        self._entries = read_entries(self.path)
        self._stamp = stamp

    def lookup(self, token: str) -> TokenEntry | None:
        """The entry for this token, or None (unknown or revoked)."""
        digest = hash_token(token)
        with self._lock:
            try:
                self._load()
            except TokenFileError:
                pass  # a file being rewritten by hand: keep the last good one
            entries = self._entries
        found = None
        for e in entries:  # every entry compared, in constant time each
            if hmac.compare_digest(e.sha256, digest):
                found = e
        return found
