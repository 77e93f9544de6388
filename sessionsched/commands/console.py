"""Where the commands print their tables (``rich``)."""

from __future__ import annotations

from rich.console import Console


def console() -> Console:
    """The terminal's console; off a terminal (a pipe, a file, a test) one 200 columns wide:
    rich would squeeze the tables into 80 and cut the app and queue names short."""
    out = Console()
    return out if out.is_terminal else Console(width=200)
