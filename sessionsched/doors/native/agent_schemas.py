"""The agent protocol's bodies and answer on the native door (docs/design/agent-protocol.md):
what a driver's agent sends (register, heartbeat, watch) and what it is told. An agent's body
may carry fields a server does not know (a newer agent's): they are ignored, never refused."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, field_validator
from pydantic_core import PydanticCustomError

from sessionsched.store.schema import SPARK_APP_ID_MAX

# A custom resource's amount (an executor's, a task's): NaN or infinity is no amount.
Amount = Annotated[float, Field(ge=0, allow_inf_nan=False)]
# A time (epoch seconds, the agent's clock) and a length of time: NaN or infinity is neither,
# and one would reach the usage figures and the estimates through every min() and max().
Time = Annotated[float, Field(allow_inf_nan=False)]
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
# What a driver counts (executors, tasks, a profile's id, cores, MiB) is a Java int in Spark:
# a larger number is no driver's, and would be shown and summed as the app's demand.
INT_MAX = 2**31 - 1


class AgentExecutor(BaseModel):
    id: str
    idle: bool = False
    started_at: Time = 0.0
    profile: int = Field(0, ge=0, le=INT_MAX)  # its resource profile (0: the default one)


class AgentProfile(BaseModel):
    """One resource profile of the app (stage-level scheduling): its executor's shape, its
    tasks' amounts, and what it wants now."""

    id: int = Field(ge=0, le=INT_MAX)
    cores: int = Field(1, ge=1, le=INT_MAX)
    memory_mib: int = Field(1024, ge=1, le=INT_MAX)
    resources: dict[str, Amount] = Field(default_factory=dict)
    task_cpus: float = Field(1.0, gt=0, allow_inf_nan=False)
    task_resources: dict[str, Amount] = Field(default_factory=dict)
    demand: int = Field(0, ge=0, le=INT_MAX)
    pending_tasks: int = Field(0, ge=0, le=INT_MAX)
    running_tasks: int = Field(0, ge=0, le=INT_MAX)


class AgentDoneStage(BaseModel):
    tasks: int = Field(ge=0, le=INT_MAX)
    task_s: Seconds  # its tasks' mean length


class AgentActiveStage(BaseModel):
    tasks: int = Field(ge=0, le=INT_MAX)
    done: int = Field(0, ge=0, le=INT_MAX)
    running: int = Field(0, ge=0, le=INT_MAX)
    oldest_running_s: Seconds | None = None
    task_s: Seconds | None = None  # its completed tasks' mean length so far


class AgentStages(BaseModel):
    """The app's Spark stages: those completed, in the order they completed, and those
    running now (``model.stages``); for the estimated starts only. Longer lists than an
    agent sends are cut, not refused: the rest of its report counts."""

    done: list[AgentDoneStage] = Field(default_factory=list)
    active: list[AgentActiveStage] = Field(default_factory=list)


class AgentRemoved(BaseModel):
    id: str
    at: Time  # epoch seconds (the agent's clock): when the executor's driver removed it


class AgentRegister(BaseModel):
    app_id: str
    spark_app_id: str | None = Field(None, max_length=SPARK_APP_ID_MAX)
    spark_version: str | None = None
    pid: int | None = None
    control: str = "full"
    reason: str | None = None
    attempt: int | None = Field(None, ge=1)  # its driver's (several clusters): AgentDesk


class AgentHeartbeat(BaseModel):
    app_id: str
    demand: int = Field(0, ge=0, le=INT_MAX)
    pending_tasks: int = Field(0, ge=0, le=INT_MAX)
    running_tasks: int = Field(0, ge=0, le=INT_MAX)
    executors: list[AgentExecutor] = Field(default_factory=list)
    control: str | None = None
    # When the agent read these facts, and when the executors gone since its last report
    # left (epoch seconds, the agent's clock); an older agent sends neither.
    observed_at: Time | None = None
    removed: list[AgentRemoved] = Field(default_factory=list)
    changed_after: Time | None = None  # the agent's look before, the facts as they were
    # Every resource profile the driver knows; empty (an older agent): the default profile
    # alone, its demand ``demand``.
    profiles: list[AgentProfile] = Field(default_factory=list)
    attempt: int | None = Field(None, ge=1)  # as at its registration
    stages: AgentStages | None = None  # an older agent, or one that could not read them

    # An id twice is no list of a driver's executors (the engine would drop the report, and
    # the desk keep it as taken) nor of its profiles (which one's shape and demand count?).
    @field_validator("executors")
    @classmethod
    def _executors_once(cls, executors: list[AgentExecutor]) -> list[AgentExecutor]:
        _once("executor", [e.id for e in executors])
        return executors

    @field_validator("profiles")
    @classmethod
    def _profiles_once(cls, profiles: list[AgentProfile]) -> list[AgentProfile]:
        _once("profile", [p.id for p in profiles])
        return profiles


def _once(what: str, ids: list) -> None:
    seen = set()
    for i in ids:
        if i in seen:
            raise PydanticCustomError("listed_twice", "{what} {id} is listed twice",
                                      {"what": what, "id": repr(i)})
        seen.add(i)


class AgentWatch(BaseModel):
    app_id: str
    version: int = Field(0, ge=0)
    wait_s: float | None = Field(None, ge=0)
    attempt: int | None = Field(None, ge=1)  # as at its registration


class ReclaimOrder(BaseModel):
    executor_ids: list[str]
    mode: str
    deadline: float | None


class AgentReply(BaseModel):
    heartbeat_s: float
    keepalive_s: float
    version: int
    target: int
    grant: int
    state: str
    reclaim: list[ReclaimOrder]
    # ``grant`` split over the app's resource profiles (profile id -> executors); empty when
    # the app reported no profile besides the default.
    grants: dict[str, int] = Field(default_factory=dict)
