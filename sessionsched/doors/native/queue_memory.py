"""Each queue's executor memory held and wanted (parents summing their children), for the
queue bars' memory beside their cores: ``executor_memory_mib`` and ``demand_memory_mib`` in
``GET /api/v1/queues``.

The engine's queue totals (``QueueUsage``) count cores; the memory is worked out here from the
published view, as the ledger counts the cores (``engine/ledger.py``: the executors held, and
the executors wanted, times each app's executor size). O(apps) per read view: the queues'
answer is built once per view (``shared_answers``), whoever asks.
"""

from __future__ import annotations


def queue_memory(view) -> dict[str, tuple[int, int]]:
    """Per queue name: (MiB of executor memory its apps hold, MiB they want). ``view``: the
    service's published read view (its engine's apps and queues, the submissions)."""
    out: dict[str, list[int]] = {q.name: [0, 0] for q in view.engine.root.walk()}
    subs = view.submissions
    for facts in view.engine.apps.values():
        if facts.state.terminal or not (facts.executors or facts.demand):
            continue
        sub = subs.get(facts.app_id)
        if sub is None:
            continue
        mem = sub.spec.executor.mem_mib
        parts = facts.queue.split(".")
        for n in range(1, len(parts) + 1):
            row = out.get(".".join(parts[:n]))
            if row is not None:
                row[0] += facts.executors * mem
                row[1] += facts.demand * mem
    return {name: (held, wanted) for name, (held, wanted) in out.items()}
