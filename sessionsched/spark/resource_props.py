"""Custom resources an app asks for (GPUs and any other resource name), read from its Spark
properties and checked by Spark's own rules, so a submission Spark would refuse at start is
refused here first, with one line naming the property.

  * ``spark.driver.resource.{name}.amount``, ``spark.executor.resource.{name}.amount``: whole
    numbers >= 0 per driver and per executor (Spark reads them as integers);
  * ``spark.task.resource.{name}.amount``: what one task takes, > 0; a fraction <= 1 lets
    ``1 / amount`` tasks share one unit (0.5: two tasks a GPU), above 1 it must be whole;
  * a task amount needs an executor amount of that resource, at least as large.
Tasks per executor follow Spark's rule (``tasks_per_executor``): the fewest any one resource
allows, cores (``spark.executor.cores // spark.task.cpus``) included.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..model import WHOLE_NUMBER
from ..model.custom import Custom, custom_of

_AMOUNT = re.compile(r"spark\.(driver|executor|task)\.resource\.(.+)\.amount")
_NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?|\.[0-9]+")


@dataclass(frozen=True)
class ResourceAsk:
    """The custom amounts of the driver, of each executor, and of each task (name -> amount)."""

    driver: Custom = ()
    executor: Custom = ()
    task: Mapping[str, float] = field(default_factory=dict)


def _whole(key: str, value: str) -> int:
    text = value.strip()
    if not WHOLE_NUMBER.fullmatch(text) or int(text) < 0:
        raise ValueError(f"{key}={value!r}: expected a whole number >= 0")
    return int(text)


def _task(key: str, value: str) -> float:
    text = value.strip()
    if not _NUMBER.fullmatch(text) or float(text) <= 0:
        raise ValueError(f"{key}={value!r}: expected a number > 0")
    amount = float(text)
    if amount > 1 and not amount.is_integer():
        raise ValueError(f"{key}={value!r}: a task amount must be at most 1 or a whole number")
    return amount


def slots(executor_amount: int, task_amount: float) -> int:
    """Tasks one executor's ``executor_amount`` units run at once (Spark's rule)."""
    if task_amount <= 1:
        return executor_amount * math.floor(1 / task_amount + 1e-9)
    return executor_amount // int(task_amount)


def resource_ask(props: Mapping[str, str]) -> ResourceAsk:
    """The custom amounts ``props`` ask for, checked (module doc); ValueError names the
    property and the rule it breaks."""
    found: dict[str, dict[str, float]] = {"driver": {}, "executor": {}, "task": {}}
    for key, value in props.items():
        m = _AMOUNT.fullmatch(key)
        if m is None:
            continue
        component, name = m.groups()
        found[component][name] = _task(key, value) if component == "task" else _whole(key, value)
    executor = found["executor"]
    for name, amount in sorted(found["task"].items()):
        has = executor.get(name, 0)
        if not has:
            raise ValueError(
                f"spark.task.resource.{name}.amount={amount:g} needs"
                f" spark.executor.resource.{name}.amount: no executor has {name} for its tasks")
        if slots(int(has), amount) < 1:
            raise ValueError(
                f"spark.executor.resource.{name}.amount={int(has)} is below"
                f" spark.task.resource.{name}.amount={amount:g}: no task could run")
    return ResourceAsk(custom_of({k: int(v) for k, v in found["driver"].items()}),
                       custom_of({k: int(v) for k, v in executor.items()}),
                       dict(found["task"]))


def tasks_per_executor(cores: int, task_cpus: int, ask: ResourceAsk) -> int:
    """Tasks one executor runs at once: the fewest that cores or any task resource allows."""
    per = [cores // max(task_cpus, 1)]
    have = dict(ask.executor)
    per.extend(slots(have.get(name, 0), amount) for name, amount in ask.task.items())
    return min(per)
