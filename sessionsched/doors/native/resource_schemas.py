"""The native API's shapes for custom resources (GPUs, any name Spark knows): an app's, a
queue's and the cluster's (docs/operator/resources.md), and ``NullsLeftOut``, which leaves
them out of an object while null, so a cluster without custom resources answers as it did."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, model_serializer


class NullsLeftOut(BaseModel):
    """The fields named in ``left_out_if_null`` are left out of the JSON while null: the
    custom resources' fields, so the objects of a cluster without custom resources are as
    they were."""

    left_out_if_null: ClassVar[tuple[str, ...]] = ("resources",)

    @model_serializer(mode="wrap")
    def _leave_out_nulls(self, handler):
        out = handler(self)
        for key in self.left_out_if_null:
            if key in out and out[key] is None:
                del out[key]
        return out


class AppResourcesOut(BaseModel):
    """An app's custom resources (GPUs: any name Spark knows), name -> amount: what each
    executor and its driver ask for (``spark.{executor,driver}.resource.{name}.amount``) and
    what it holds in the cluster now (its executors', and its in-cluster driver's while it
    runs)."""

    executor: dict[str, int]
    driver: dict[str, int]
    held: dict[str, int]


class QueueResourceOut(BaseModel):
    """One custom resource in one queue: what its apps hold (executors, in-cluster drivers),
    its cap and its guarantee (null: none)."""

    used: int
    max: int | None = None
    min: int | None = None


class ClusterResourceOut(BaseModel):
    """One custom resource of the cluster: its amount on the alive workers, what the
    scheduler's apps hold, what the workers reported free (null: no worker named)."""

    capacity: int
    used: int
    free: int | None = None


class ExecutorNoteOut(BaseModel):
    """Why an app that runs holds fewer executors than it wants (one app's answer, GET
    /api/v1/apps/{id}): ``code`` one of ``target_below_demand``, ``resource_short`` (then
    ``resource`` names it), ``room_short``, ``executors_starting``; ``text`` the sentence with
    its numbers (docs/user/watching.md#why-an-app-waits)."""

    code: str
    text: str
    resource: str | None = None
