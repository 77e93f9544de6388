"""A scheduler stand-in for the takeover test, run as its own process:
``python -m tests.store.leader_proc URL``. It competes for leadership and prints, one line each,
``standby PID`` once, ``try`` after each failed attempt, ``leader`` when it leads and
``lost REASON`` if it loses; it leads until it is killed."""

from __future__ import annotations

import os
import sys
import threading

from sessionsched.store.leadership import Leadership

NAME = "takeover-test"


def main() -> None:
    leadership = Leadership(sys.argv[1], name=NAME, check_s=0.5)
    print(f"standby {os.getpid()}", flush=True)
    stop = threading.Event()
    while not leadership.try_acquire():
        print("try", flush=True)
        stop.wait(leadership.check_s)
    print("leader", flush=True)
    leadership.keep(on_lost=lambda reason: (print(f"lost {reason}", flush=True), stop.set()))
    stop.wait()


if __name__ == "__main__":
    main()
