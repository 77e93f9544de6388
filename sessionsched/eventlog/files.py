"""Which event logs a list of paths names, and each one's JSON lines.

Spark writes one application's log as either
- one file in ``spark.eventLog.dir``: ``<app id>[_<attempt>][.<codec>]``, with ``.inprogress``
  appended while the app runs; or
- a rolling log (``spark.eventLog.rolling.enabled``): a directory
  ``eventlog_v2_<app id>[_<attempt>]`` of ``events_<n>_<app id>[.<codec>]`` files, read in the
  order of ``n``, and an ``appstatus_<app id>`` file (``appstatus_<app id>.inprogress`` while
  the app runs).

A path given is a log file, a rolling log's directory, or a directory of them (its hidden
files, such as Hadoop's ``.crc`` files, are not logs). Nothing is read until ``read_lines``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .codecs import CODECS, UnreadableLog, decode

ROLLING_PREFIX = "eventlog_v2_"
INPROGRESS = ".inprogress"
_EVENTS_FILE = re.compile(r"events_(\d+)_")


@dataclass(frozen=True)
class LogSource:
    """One application's log: ``path`` as the user sees it, ``parts`` the files it is read
    from, in order (one for a single-file log)."""

    path: Path
    parts: tuple[Path, ...]


def find_logs(paths: list[Path]) -> tuple[list[LogSource], list[str]]:
    """The logs ``paths`` name, in the order given (a directory's sorted by name), and a line
    for each path that names none."""
    found: list[LogSource] = []
    missing: list[str] = []
    for path in paths:
        if path.is_dir() and not path.name.startswith(ROLLING_PREFIX):
            entries = sorted(p for p in path.iterdir() if not p.name.startswith("."))
            found += [_source(p) for p in entries if p.is_file() or _rolling(p)]
        elif path.exists():
            found.append(_source(path))
        else:
            missing.append(f"{path}: no such file or directory")
    return found, missing


def _rolling(path: Path) -> bool:
    return path.is_dir() and path.name.startswith(ROLLING_PREFIX)


def _source(path: Path) -> LogSource:
    if not _rolling(path):
        return LogSource(path, (path,))
    numbered = [(int(m.group(1)), p) for p in path.iterdir()
                if (m := _EVENTS_FILE.match(p.name)) and p.is_file()]
    return LogSource(path, tuple(p for _, p in sorted(numbered)))


def codec_of(name: str) -> str | None:
    """The codec a log file's name says (None: plain); UnreadableLog for another suffix."""
    if name.endswith(INPROGRESS):
        raise UnreadableLog("still being written (.inprogress)")
    if "." not in name:
        return None
    suffix = name.rsplit(".", 1)[1]
    if suffix in CODECS:
        return suffix
    if suffix == "json":  # plain JSON lines under a name a person gave it
        return None
    raise UnreadableLog(f"unknown codec {suffix!r} (Spark writes {', '.join(CODECS)})")


def read_lines(source: LogSource) -> list[str]:
    """The log's JSON lines, every part decoded and joined; UnreadableLog if it cannot be read
    whole (a rolling log without its events files or whose status says it is still running)."""
    if _rolling(source.path):
        status = [p.name for p in source.path.iterdir() if p.name.startswith("appstatus_")]
        if not source.parts:
            raise UnreadableLog("a rolling event log directory without events_ files")
        if any(name.endswith(INPROGRESS) for name in status):
            raise UnreadableLog("the app was still running (appstatus ... .inprogress)")
    text = []
    for part in source.parts:
        raw = decode(codec_of(part.name), part.read_bytes())
        try:
            text.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise UnreadableLog("not text (a foreign or damaged file)") from None
    lines = "\n".join(text).splitlines()
    return [line for line in lines if line.strip()]
