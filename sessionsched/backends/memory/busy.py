"""Resources in use by running tasks, integrated over time: the simulator's
``utilization_by_resource`` (docs/operator/simulator.md).

A running task uses its app's ``Job.task_amounts``: ``spark.task.cpus`` cores, its share of
its executor's memory (the memory over the tasks the executor runs at once) and its task
amount of each custom resource (``spark.task.resource.gpu.amount``: 0.5 for a task that
shares a GPU with another). Busy-seconds of a resource are the sum over tasks of the task's
time x its amount: a GPU stage of N tasks of S seconds at 0.5 GPU each is N x S x 0.5
GPU-seconds, exactly, however the tasks were spread over executors and time.
"""

from __future__ import annotations


class BusyMeter:
    """``cores`` and ``core_s``: running tasks one core each (the simulator's ``utilization``,
    as it always counted them); ``levels`` and ``seconds``: per resource, by the amounts."""

    def __init__(self) -> None:
        self.cores = 0
        self.core_s = 0.0
        self.levels: dict[str, float] = {}  # resource -> amount in use now
        self.seconds: dict[str, float] = {}  # resource -> amount x seconds in use so far

    def tasks(self, amounts: tuple[tuple[str, float], ...], n: int) -> None:
        """``n`` tasks of ``amounts`` started (negative: ended)."""
        self.cores += n
        for name, amount in amounts:
            self.levels[name] = self.levels.get(name, 0.0) + n * amount
            self.seconds.setdefault(name, 0.0)

    def tick(self, dt: float) -> None:
        self.core_s += self.cores * dt
        for name, level in self.levels.items():
            if level:
                self.seconds[name] += level * dt
