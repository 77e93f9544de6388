"""Tasks one executor runs at once, by Spark's rule (the agent's own copy: it ships alone)."""

from __future__ import annotations

import math
import re

_TASK_AMOUNT = re.compile(r"spark\.task\.resource\.(.+)\.amount")


def tasks_per_executor(conf: dict[str, str]) -> int:
    """Tasks one executor runs at once by Spark's rule: spark.executor.cores //
    spark.task.cpus, or fewer where a task resource allows fewer (a task amount <= 1 shares a
    unit among 1 / amount tasks). The scheduler's own copy of the rule, with the checks, is
    ``spark.resource_props``; the agent ships alone (standard library only), so it is
    repeated here. At least 1."""
    try:
        per = [int(conf.get("spark.executor.cores", "1")) // int(conf.get("spark.task.cpus", "1"))]
        for key, value in conf.items():
            m = _TASK_AMOUNT.fullmatch(key)
            if m is None:
                continue
            task = float(value)
            has = int(conf.get(f"spark.executor.resource.{m.group(1)}.amount", "0"))
            per.append(has * math.floor(1 / task + 1e-9) if task <= 1 else has // int(task))
    except (ValueError, ZeroDivisionError):  # Spark would not have started with these
        return 1
    return max(min(per), 1)
