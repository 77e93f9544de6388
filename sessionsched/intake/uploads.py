"""Files uploaded by remote clients, stored once per content (docs/user/submit.md,
"Submitting from another host").

Layout under ``<state_dir>/uploads``: one directory per SHA-256 (lower-case hex), holding the
content once as ``.content`` (read-only) and, for each name a submission gave it, a hard link
``<name>`` to it (spark-submit reads the name: ``.py`` makes a Python app, ``--files`` are
shown to the app under their base name). Same content, same directory: a file sent again is
not stored again, whatever it is called.

- ``put(sha, chunks)``: the bytes, hashed as they stream to a temporary file and kept only if
  their SHA-256 is the one named; refused over ``uploads.max_file_bytes`` (413) or when the
  store would grow past ``uploads.max_total_bytes`` (507);
- ``has(sha)``: whether it is stored (a client asks first, and sends nothing if so);
- ``place(sha, name)``: the path a submission uses (the link, made on first use);
- ``sweep(referenced)``: the directories no app in memory refers to (``referenced``: the
  hashes ``referenced(texts)`` finds in the apps' arguments), and untouched for
  ``uploads.orphan_grace_s`` by the store's clock (an upload, a check or a placement touches
  its directory), are removed, with half-received files as old. An app forgotten by retention
  (``server.retained_ended_apps``) no longer refers to its files, so they go at the next sweep
  after it, or ``orphan_grace_s`` after their last use. Uploads never used by a submission go
  the same way. The store's records of forgotten apps keep the old paths: nothing launches an
  ended app again.

Every refusal is an ``UploadError`` with one line and an HTTP status.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path

from sessionsched.config import UploadsSection

SHA256 = re.compile(r"[0-9a-f]{64}")
CONTENT = ".content"
INCOMING = ".incoming"
MAX_NAME_BYTES = 255


class UploadError(ValueError):
    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def check_sha(sha: str) -> str:
    if not isinstance(sha, str) or not SHA256.fullmatch(sha):
        shown = sha[:80] if isinstance(sha, str) else type(sha).__name__
        raise UploadError(f"{shown!r} is not a SHA-256 (64 lower-case hex digits)")
    return sha


def check_name(name: str) -> str:
    """A stored file's name: one path component (no ``/``), printable, not ``.``/``..``."""
    if (not name or name in (".", "..", CONTENT, INCOMING) or "/" in name
            or not name.isprintable() or len(name.encode("utf-8", "surrogatepass"))
            > MAX_NAME_BYTES):
        raise UploadError(f"file name {name[:80]!r} cannot be stored: expected one printable "
                          f"path component of at most {MAX_NAME_BYTES} bytes")
    return name


class UploadStore:
    def __init__(self, root: str | Path, limits: UploadsSection,
                 clock: Callable[[], float] = time.time):
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)  # also the working directory of last resort
        self.limits = limits
        self._clock = clock
        self._lock = threading.Lock()  # sizes checked and files renamed in, one at a time

    def _dir(self, sha: str) -> Path:
        return self.root / check_sha(sha)

    def _touch(self, path: Path) -> None:
        now = self._clock()
        os.utime(path, (now, now))

    def has(self, sha: str) -> int | None:
        """The stored size, or None; a stored one counts as used now (see ``sweep``)."""
        content = self._dir(sha) / CONTENT
        try:
            size = content.stat().st_size
        except FileNotFoundError:
            return None
        self._touch(content.parent)
        return size

    def total_bytes(self) -> int:
        total = 0
        if not self.root.is_dir():
            return 0
        for entry in os.scandir(self.root):
            if SHA256.fullmatch(entry.name):
                try:
                    total += os.stat(Path(entry.path, CONTENT)).st_size
                except FileNotFoundError:
                    pass
        return total

    async def put(self, sha: str, chunks: AsyncIterator[bytes],
                  length: int | None = None) -> tuple[int, bool]:
        """Store the streamed bytes as ``sha``: (size, newly stored?). The bytes of a file
        stored already are not read."""
        check_sha(sha)
        limit = self.limits.max_file_bytes
        if length is not None and length > limit:
            raise UploadError(f"file of {length} bytes is over uploads.max_file_bytes "
                              f"({limit})", 413)
        size = self.has(sha)
        if size is not None:
            return size, False
        if length is not None:
            self._check_room(length)
        incoming = self.root / INCOMING
        incoming.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=incoming, prefix=f"{sha[:12]}.")
        try:
            digest = hashlib.sha256()
            size = 0
            with os.fdopen(fd, "wb") as f:
                async for chunk in chunks:
                    size += len(chunk)
                    if size > limit:
                        raise UploadError(f"file over uploads.max_file_bytes ({limit} bytes)",
                                          413)
                    digest.update(chunk)
                    f.write(chunk)
            if digest.hexdigest() != sha:
                raise UploadError(f"the bytes sent have SHA-256 {digest.hexdigest()}, not {sha}; "
                                  "nothing stored")
            os.chmod(tmp, 0o444)
            with self._lock:
                if self.has(sha) is not None:  # the same bytes came in meanwhile
                    return size, False
                self._check_room(size)
                target = self._dir(sha)
                target.mkdir(exist_ok=True)
                os.replace(tmp, target / CONTENT)
            return size, True
        finally:
            Path(tmp).unlink(missing_ok=True)

    def _check_room(self, size: int) -> None:
        total = self.total_bytes()
        if total + size > self.limits.max_total_bytes:
            raise UploadError(f"no room for {size} bytes: uploads hold {total} of "
                              f"uploads.max_total_bytes ({self.limits.max_total_bytes})", 507)

    def place(self, sha: str, name: str) -> str:
        """The path of ``sha``'s content under ``name`` (linked on first use)."""
        directory = self._dir(sha)
        check_name(name)
        with self._lock:  # not removed by a sweep between the check and the link
            content = directory / CONTENT
            if not content.is_file():
                raise UploadError(f"no upload {sha}: upload the file first "
                                  f"(PUT /api/v1/uploads/{sha})")
            link = directory / name
            try:
                os.link(content, link)
            except FileExistsError:
                pass  # the same content under the same name: the same file
            self._touch(directory)
        return str(link)

    def referenced(self, texts: Iterable[str]) -> set[str]:
        """The hashes whose directories these strings (argv, conf values, cwd) name."""
        pattern = re.compile(re.escape(str(self.root)) + r"/([0-9a-f]{64})")
        return {m.group(1) for text in texts for m in pattern.finditer(text)}

    def sweep(self, referenced: set[str]) -> list[str]:
        """Remove what nothing refers to and nobody touched for ``orphan_grace_s`` (see the
        module doc); also half-received files that old. The hashes removed."""
        if not self.root.is_dir():
            return []
        cutoff = self._clock() - self.limits.orphan_grace_s
        removed: list[str] = []
        with self._lock:
            for entry in os.scandir(self.root):
                if not SHA256.fullmatch(entry.name) or entry.name in referenced:
                    continue
                if entry.stat().st_mtime <= cutoff:
                    shutil.rmtree(entry.path, ignore_errors=True)
                    removed.append(entry.name)
            incoming = self.root / INCOMING
            if incoming.is_dir():
                for entry in os.scandir(incoming):
                    if entry.stat().st_mtime <= cutoff:
                        Path(entry.path).unlink(missing_ok=True)
        return removed
