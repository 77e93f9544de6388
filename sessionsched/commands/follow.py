"""Following one app until it ends (``submit --wait``): a live line on a terminal, a plain
line per change otherwise; and the end of a failed driver's log."""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.live import Live
from rich.text import Text

from ..client import App, SchedulerClient, SchedulerError, Unreachable
from .client_cmds import describe

POLL_S = 0.5
SERVER_OUTAGE_S = 60.0  # --wait rides out a scheduler restart this long, then gives up


def wait_for(client: SchedulerClient, app_id: str, out: Console) -> App:
    """Poll until the app ends, showing where it stands: a live line on a terminal, a plain
    line per change otherwise. Rides out a server outage of up to SERVER_OUTAGE_S."""
    last_line = ""
    outage_since: float | None = None

    def poll() -> App | None:
        nonlocal outage_since
        try:
            app = client.app(app_id)
        except Unreachable:
            outage_since = outage_since or time.monotonic()
            if time.monotonic() - outage_since > SERVER_OUTAGE_S:
                raise
            return None
        outage_since = None
        return app

    if out.is_terminal:
        with Live("", console=out, refresh_per_second=4, transient=False) as live:
            while True:
                app = poll()
                if app is not None:
                    live.update(Text(describe(app)))
                    if app.state.terminal:
                        return app
                time.sleep(POLL_S)
    while True:
        app = poll()
        if app is not None:
            line = describe(app)
            if line != last_line:
                print(line, file=sys.stderr, flush=True)
                last_line = line
            if app.state.terminal:
                return app
        time.sleep(POLL_S)


def print_log_tail(client: SchedulerClient, app_id: str) -> None:
    """On failure, the end of the driver's log: what spark-submit would have shown."""
    try:
        tail = client.log(app_id, tail=20).rstrip()
    except SchedulerError:
        return
    if tail:
        print(f"--- last lines of {app_id}'s driver log ---\n{tail}", file=sys.stderr)
