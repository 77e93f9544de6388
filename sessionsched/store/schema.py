"""The tables. Times are epoch seconds (floats); structured parts are JSON columns.

``apps``: one row per application, with all it takes to relaunch or re-adopt it.
``events``: the audit trail — every submission, state change, priority change and kill.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# The longest Spark application id a row holds: a longer one is refused where it comes in
# (an agent's registration), for PostgreSQL would refuse the whole cycle's commit.
SPARK_APP_ID_MAX = 128
# The longest user name a row holds (a submission's, with auth off its own word): refused
# longer by the intake's guard, for PostgreSQL would refuse the row.
USER_MAX = 128


class Base(DeclarativeBase):
    pass


class AppRow(Base):
    __tablename__ = "apps"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(Text)
    user: Mapped[str] = mapped_column(String(USER_MAX))
    queue: Mapped[str] = mapped_column(String(256))
    priority: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text, default="")
    submitted_at: Mapped[float] = mapped_column(Float)
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    first_executor_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    finished_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    spark_app_id: Mapped[str | None] = mapped_column(String(SPARK_APP_ID_MAX), nullable=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    argv: Mapped[list[str]] = mapped_column(JSON, default=list)
    conf: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    env: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    cwd: Mapped[str | None] = mapped_column(Text, nullable=True)
    rest_request: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    handle: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    log_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    sender: Mapped[str] = mapped_column(String(256), default="")
    warnings: Mapped[list[str]] = mapped_column(JSON, default=list)
    # A launch waiting to be tried again after a transient failure (``carry.Retries``):
    # ``{"tries": N, "at": EPOCH_S}``, nothing started. Added to an older database by ``Store``
    # (APP_COLUMNS).
    launch_wait: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True),
                                                              nullable=True)

    # What the app used so far (``sessionsched.model.usage.AppUsage.to_json``: core- and GiB-seconds
    # and the levels they grow by since ``since``), written by the cycle as reports change it.
    usage: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True), nullable=True)
    # Set with an app's end by the cycle, cleared by the usage meter's write of its last figures
    # (and their hours), which follows in another commit: a restart finds the ends a kill -9
    # fell between, and counts them (``service.restore``). Older rows: NULL, counted.
    usage_open: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    # Behind several clusters: the one the app was placed on, written in the commit of its
    # launch decision (``Placed``), so a restart adopts it there only. NULL while queued, with
    # one cluster (its apps run there) and in older rows. Added by ``Store`` (APP_COLUMNS).
    cluster: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # Its completed Spark stages as its agent reported them (``model.stages.run_to_json``:
    # ``[[tasks, mean task s], ...]`` in the order they completed), rewritten as they grow:
    # what a later run of its name is estimated by (``work_lengths.stage_runs``). NULL: none
    # reported. Added by ``Store`` (APP_COLUMNS).
    stages: Mapped[list[Any] | None] = mapped_column(JSON(none_as_null=True), nullable=True)

    __table_args__ = (
        Index("ix_apps_state", "state"),
        Index("ix_apps_spark_app_id", "spark_app_id"),
    )


class EventRow(Base):
    __tablename__ = "events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    app_id: Mapped[str] = mapped_column(ForeignKey("apps.id"), index=True)
    at: Mapped[float] = mapped_column(Float)
    kind: Mapped[str] = mapped_column(String(32))
    detail: Mapped[str] = mapped_column(Text)
    # The audit's facts as columns (submissions, priority changes, kills): who, from where,
    # the value before and after. Added to an older database by ``Store`` (AUDIT_COLUMNS).
    actor: Mapped[str | None] = mapped_column(String(200), nullable=True)
    sender: Mapped[str | None] = mapped_column(String(200), nullable=True)
    old_value: Mapped[str | None] = mapped_column(Text, nullable=True)
    new_value: Mapped[str | None] = mapped_column(Text, nullable=True)


APP_COLUMNS = {"launch_wait": "JSON", "usage": "JSON", "usage_open": "BOOLEAN",
               "cluster": "VARCHAR(64)", "stages": "JSON"}
AUDIT_COLUMNS = {"actor": "VARCHAR(200)", "sender": "VARCHAR(200)", "old_value": "TEXT",
                 "new_value": "TEXT"}


class ProbeRow(Base):
    """One row, rewritten by ``Store.health`` to check that the store takes writes again."""

    __tablename__ = "store_probe"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    at: Mapped[float] = mapped_column(Float)


class CommitRow(Base):
    """One row: the token of the last committed write transaction. A commit whose answer was
    lost (the connection died during COMMIT) is settled by reading it back (``Writer``)."""

    __tablename__ = "store_commits"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    token: Mapped[str] = mapped_column(String(32))


class LeaderRow(Base):
    """Who leads (active/standby on PostgreSQL, ``Leadership.announce``): one row per lock
    name, rewritten by each new leader. ``backend_pid`` is the PostgreSQL session holding the
    lock, so a reader can tell a live leader's row from a dead one's (``Leadership.leader``)."""

    __tablename__ = "leader"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    url: Mapped[str] = mapped_column(Text)
    backend_pid: Mapped[int] = mapped_column(Integer)
    host: Mapped[str] = mapped_column(String(256))
    pid: Mapped[int] = mapped_column(Integer)
    since: Mapped[float] = mapped_column(Float)


class DecayedRow(Base):
    """Decayed fair share (``engine.arbitration.decay``): one row per queue (``kind``
    "queue", ``user`` empty) and per user of a fairshare leaf that decays ("user"): the
    decayed usage ``past_cores`` at ``since`` (epoch seconds) and the cores used since.
    Rewritten as they change."""

    __tablename__ = "decayed_usage"

    kind: Mapped[str] = mapped_column(String(8), primary_key=True)
    queue: Mapped[str] = mapped_column(String(256), primary_key=True)
    user: Mapped[str] = mapped_column(String(USER_MAX), primary_key=True)
    past_cores: Mapped[float] = mapped_column(Float)
    since: Mapped[float] = mapped_column(Float)
    cores: Mapped[float] = mapped_column(Float)


class UsageHourRow(Base):
    """What the apps of one (queue, user) used in one hour (``sessionsched.model.usage.HOURLY``),
    added to by the usage meter with each write of the apps' usage columns: the rollup that
    stays when app rows go, and what ``--by queue|user`` windows add up."""

    __tablename__ = "usage_hours"

    hour: Mapped[float] = mapped_column(Float, primary_key=True)  # epoch seconds, UTC hour
    queue: Mapped[str] = mapped_column(String(256), primary_key=True)
    user: Mapped[str] = mapped_column(String(USER_MAX), primary_key=True)
    apps: Mapped[float] = mapped_column(Float, default=0.0)
    held_core_s: Mapped[float] = mapped_column(Float, default=0.0)
    busy_core_s: Mapped[float] = mapped_column(Float, default=0.0)
    reclaimed_core_s: Mapped[float] = mapped_column(Float, default=0.0)
    reclaimed_executors: Mapped[float] = mapped_column(Float, default=0.0)
    held_gib_s: Mapped[float] = mapped_column(Float, default=0.0)
    driver_core_s: Mapped[float] = mapped_column(Float, default=0.0)
    driver_gib_s: Mapped[float] = mapped_column(Float, default=0.0)
    queued_s: Mapped[float] = mapped_column(Float, default=0.0)


class UsageHourResourceRow(Base):
    """What the apps of one (queue, user) used of one custom resource (a GPU, any name Spark
    knows) in one hour (``sessionsched.model.usage.RES_HOURLY``): the rollup's custom part, one
    row per resource name, so a new name needs no new column. Written with ``usage_hours``."""

    __tablename__ = "usage_hour_resources"

    hour: Mapped[float] = mapped_column(Float, primary_key=True)  # epoch seconds, UTC hour
    queue: Mapped[str] = mapped_column(String(256), primary_key=True)
    user: Mapped[str] = mapped_column(String(USER_MAX), primary_key=True)
    resource: Mapped[str] = mapped_column(String(128), primary_key=True)
    held_s: Mapped[float] = mapped_column(Float, default=0.0)
    busy_s: Mapped[float] = mapped_column(Float, default=0.0)
    reclaimed_s: Mapped[float] = mapped_column(Float, default=0.0)
    driver_s: Mapped[float] = mapped_column(Float, default=0.0)
