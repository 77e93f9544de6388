"""``submit --dry-run``: what a submission would meet now, printed; nothing is stored.

Lines (stdout): ``fits: yes`` or ``fits: no - <the number that does not fit>``, then for an app
that fits its queue, ``starts: now`` or ``waits: position N in Q - <reason>``, ``estimated
start: ≈ HH:MM:SS`` and the counter-offer if there is one. Exit 0 if it fits, 1 if not.
Behind several clusters, after ``fits: yes``: ``cluster: a`` (where it would start: for an app
that would start at once, the first cluster in the placement rule's order with room for it
now; for one that would wait, the one it would start on after the apps queued ahead of it
there) or ``clusters: a, b (none would start it within 12 h)``; ``fits: no`` names each
cluster it may use and why it fits none.
"""

from __future__ import annotations

from ..client import SchedulerClient, Submission
from ..client.shapes import parse_time
from .client_cmds import clock


def dry_run_lines(answer: dict) -> list[str]:
    if not answer["fits"]:
        return [f"fits: no - {answer['problem']}"]
    lines = ["fits: yes"]
    if answer.get("cluster"):  # behind several clusters only
        later = "" if answer.get("position") is None else " (once it can start there)"
        lines.append(f"cluster: {answer['cluster']}{later}")
    elif answer.get("clusters"):
        lines.append(f"clusters: {', '.join(answer['clusters'])} (none would start it within"
                     " 12 h)")
    if answer.get("position") is None:
        lines.append(f"starts: now, in {answer['queue']}")
    else:
        why = f" - {answer['reason']}" if answer.get("reason") else ""
        lines.append(f"waits: position {answer['position']} in {answer['queue']}{why}")
    start = parse_time(answer.get("estimated_start"))
    lines.append(f"estimated start: {'≈ ' + clock(start) if start else 'not within 12 h'}")
    offer = answer.get("counter_offer")
    if offer:
        lines.append(f"counter-offer: {offer['text']}")
    return lines


def print_dry_run(client: SchedulerClient, submission: Submission) -> int:
    answer = client.dry_run(submission)
    print("\n".join(dry_run_lines(answer)), flush=True)
    return 0 if answer["fits"] else 1
