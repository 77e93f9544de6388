"""A filesystem that fills up for real: a small tmpfs mounted as root (the store-fault tests)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tiny_tmpfs(mnt: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted on ``mnt`` (created), unmounted at the end."""
    if os.geteuid() != 0:
        pytest.fail("mounting a tmpfs needs root (CI and `make test` run as root)")
    mnt.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(mnt)],
                   check=True, timeout=30)
    try:
        yield mnt
    finally:
        done = subprocess.run(["umount", str(mnt)], capture_output=True, timeout=30)
        if done.returncode != 0:  # something still holds a file: detach it anyway
            subprocess.run(["umount", "-l", str(mnt)], check=True, timeout=30)


def fill(path: Path) -> None:
    """Write ``path`` until the filesystem has no byte left."""
    chunk = b"\0" * 65536
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError:
            pass
        try:  # the last few bytes
            while True:
                f.write(b"\0")
        except OSError:
            pass
