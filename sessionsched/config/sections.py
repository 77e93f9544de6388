"""The server's own sections: where it listens and keeps its state (``server``, ``tls``),
the cluster backend it drives (``cluster``, ``cluster.kubernetes``) and what a submission
gets when it says nothing (``defaults``)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from ..model import PRIORITY_DEFAULT, Resources, parse_mem_mib, parse_priority
from ..model.custom import custom_of
from .parsing import Strict


class TlsSection(Strict):
    """HTTPS: a PEM certificate (chain) and its private key. ``ca``: the CA certificate (PEM)
    that signed ``cert``, for a private CA or a self-signed certificate: the drivers the
    server launches get it (``SESSIONSCHED_CA``) so that their agents verify the server with
    it; without it they use the system's trust store."""

    cert: str
    key: str
    ca: str | None = None


class ServerSection(Strict):
    """Where the service listens and keeps its state.

    ``db_url``: the store, ``sqlite:///PATH`` or ``postgresql://USER:PASSWORD@HOST:PORT/DB``
    (psycopg 3); default a SQLite file (WAL mode) in ``state_dir``. ``heartbeat_s``: how often
    driver agents on the old protocol report; an agent silent for three heartbeats no longer
    speaks for its app's executors (the cluster's view does). ``agent_keepalive_s``: an agent
    on the change-driven protocol reports when its facts change and at least this often, and
    its watch for decisions is held open at most this long; silent for two keep-alives, it no
    longer speaks for its app (docs/design/agent-protocol.md).
    ``session_timeout``: a notebook session whose agent has been silent this many seconds is
    ended (FAILED), so a notebook that died without ``stop()`` does not hold a driver slot.
    ``retained_ended_apps``: how many ended apps (FINISHED/FAILED/KILLED) stay in memory and in
    the app list, the most recently ended; older ones are forgotten by the engine and the
    service but stay in the store, and reads by id answer for them from there (a Spark master's
    ``spark.deploy.retainedDrivers``). Keeps a long-running server's memory bounded.
    ``standby``: on a PostgreSQL store, wait as a standby while another scheduler leads it,
    and take over when that one goes (``server/leader.py``); without it a scheduler that finds
    the store led by another refuses to start. SQLite serves one scheduler only.
    ``advertise_url``: the URL that reaches this scheduler from clients and driver agents
    (standbys send clients there while it leads); default ``http(s)://host:port``.
    ``peers``: the ``advertise_url`` of the other schedulers sharing the store; the driver
    agents this one launches get them after its own, so they report to whoever leads after a
    takeover.
    ``estimate_s``: how often the queued apps' estimated starts are computed again, in the
    background (``service/estimating``, docs/design/estimates.md); 0 turns estimating off.
    ``estimate_default_run_s``: how long an app is assumed to run when no earlier run of its
    name finished.
    """

    host: str = "127.0.0.1"
    port: int = Field(6066, ge=1, le=65535)
    state_dir: str = "./.sessionsched"
    cycle_ms: int = Field(200, ge=10, le=500)
    db_url: str | None = None
    heartbeat_s: float = Field(1.0, gt=0, le=60)
    agent_keepalive_s: float = Field(10.0, ge=1, le=120)
    session_timeout: float = Field(600.0, gt=0)
    retained_ended_apps: int = Field(1000, ge=0)
    tls: TlsSection | None = None  # serve HTTPS (clients verify it: --ca)
    standby: bool = False
    advertise_url: str | None = None
    peers: list[str] = Field(default_factory=list)
    estimate_s: float = Field(5.0, ge=0, le=3600)
    estimate_default_run_s: float = Field(600.0, gt=0)

    @field_validator("host")
    @classmethod
    def _host(cls, v: str) -> str:
        return checked_host(v)

    @field_validator("advertise_url")
    @classmethod
    def _advertised(cls, v: str | None) -> str | None:
        return _base_url(v) if v is not None else v

    @field_validator("peers")
    @classmethod
    def _peers(cls, v: list[str]) -> list[str]:
        return [_base_url(u) for u in v]


def checked_host(v: str) -> str:
    """``v`` if it can be a host to listen on: a name or an address (IPv6 with its zone too).
    Anything else would fail only at the bind, after the store was opened, or be printed raw
    in the refusal to listen."""
    if not re.fullmatch(r"[A-Za-z0-9._:%\[\]-]+", v):
        raise ValueError(f"{v!r}: expected a host name or an IP address")
    return v


def _base_url(v: str) -> str:
    if not re.fullmatch(r"https?://[^/\s,]+", v.rstrip("/")):
        raise ValueError(f"{v!r}: expected http(s)://HOST:PORT")
    return v.rstrip("/")


class ConnectSection(Strict):
    """The Spark Connect door (``doors/connect``): Spark 4's thin clients
    (``sc://HOST:PORT/;token=...``) open sessions that queue as apps of kind ``connect``.

    ``port``: where it listens (on ``server.host``; 15002 is Spark's own default), with
    ``server.tls`` when that is set. ``hold_s``: how long a session's call is held while its
    app waits in its queue or its driver starts, before it is answered UNAVAILABLE (with the
    position and the reason) and the client's retry policy calls again. Long holds keep a
    queued session's start prompt: the client's waits between retries grow (x4 from 50 ms),
    a held call answers the moment the driver is up. A connection's first call is held 50 s
    at most whatever ``hold_s`` says: the driver acknowledges the client's HTTP/2 settings once
    the connection reaches it, and gRPC's client gives up on a connection after a minute
    without (``doors/connect/front``). ``idle_timeout_s``:
    a session's driver with no call for this long stops, and its app ends FINISHED (its
    executors go back earlier, by Spark's own ``executorIdleTimeout``).
    """

    port: int = Field(15002, ge=1, le=65535)
    hold_s: float = Field(50.0, gt=0, le=600)
    idle_timeout_s: float = Field(3600.0, gt=0)


class KubernetesSection(Strict):
    """``cluster.kubernetes``: where and how drivers run on Kubernetes (``backends/kubernetes``).

    The API server: ``api_server`` (a URL, no credentials: a local proxy such as ``kubectl
    proxy``, or a fake), else ``kubeconfig`` (and ``context``), else the pod's own service
    account (the scheduler running in the cluster). ``server_url``: how driver pods reach this
    scheduler (their agent's ``SESSIONSCHED_SERVER``), e.g. ``http://sessionsched.spark:6066``.
    ``upload_path``: Spark's ``spark.kubernetes.file.upload.path``, a filesystem the driver pods
    can read (s3a://, a shared volume): how local files -- the agent, a Python app -- reach
    them. ``conf``: Spark properties for every app, unless the app sets them.
    ``node_selector``: the nodes every pod runs on, and whose room is the capacity;
    ``driver_node_selector``: where driver pods run instead (a node pool of their own, its
    keys overriding ``node_selector``'s for drivers), outside the capacity when it differs.
    ``watch_timeout_s``: each watch request's ``timeoutSeconds``; ``max_failures``: consecutive
    failed list/watch requests after which the cluster counts as unreachable (requests go on).
    """

    api_server: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str = "default"
    image: str
    service_account: str | None = None
    driver_pod_template: str | None = None
    executor_pod_template: str | None = None
    node_selector: dict[str, str] = Field(default_factory=dict)
    driver_node_selector: dict[str, str] = Field(default_factory=dict)
    spark_submit: str | None = None
    server_url: str | None = None
    upload_path: str | None = None
    conf: dict[str, str] = Field(default_factory=dict)
    watch_timeout_s: int = Field(300, ge=1)
    max_failures: int = Field(5, ge=1)

    @field_validator("api_server")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError(f"{v!r}: expected http(s)://HOST:PORT")
        return v.rstrip("/") if v else v

    @field_validator("namespace")
    @classmethod
    def _dns_label(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", v):
            raise ValueError(f"{v!r} is not a valid namespace name (lower-case DNS label)")
        return v


def _mem_mib(value: Any) -> Any:
    return parse_mem_mib(value) if isinstance(value, str) else value


# Modelled workers are listed one by one (the memory backend, the simulator): a count far beyond
# any real cluster's would fill the memory listing them (10**30 overflowed), not be refused.
MAX_WORKERS = 100_000

MEMORY_ONLY = ("workers", "cores", "memory", "worker_groups", "driver_start_s",
               "executor_start_s", "executor_idle_timeout_s", "work_s")
EQUAL_WORKERS = ("workers", "cores", "memory")


class WorkerGroup(Strict):
    """``count`` workers of ``cores`` cores, ``memory`` (a Spark size) and ``resources``
    (custom resources: name -> whole amount, e.g. ``{gpu: 4}``) each: a modelled cluster of
    workers that are not all alike (the memory backend, the simulator)."""

    count: int = Field(1, ge=1, le=MAX_WORKERS)
    cores: int = Field(ge=1)
    memory: Annotated[int, BeforeValidator(_mem_mib), Field(ge=1)]
    resources: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)

    @property
    def size(self) -> Resources:
        return Resources(self.cores, self.memory, custom_of(self.resources))


def group_sizes(groups: list[WorkerGroup]) -> tuple[Resources, ...]:
    """Every worker's size, group after group."""
    return tuple(g.size for g in groups for _ in range(g.count))


def no_equal_workers_beside(groups: object, fields_set: set[str]) -> None:
    """``worker_groups`` replaces ``workers``/``cores``/``memory``: both set is a mistake."""
    both = [k for k in EQUAL_WORKERS if k in fields_set]
    if groups is not None and both:
        raise ValueError(f"{both[0]} and worker_groups: give the workers one way or the other")


class ClusterSection(Strict):
    """The cluster backend (``backends.BACKENDS``). ``master``/``master_ui``: ``standalone``'s.
    The rest but ``driver_slots`` are the ``memory`` backend's (refused with another backend,
    where they would do nothing): ``workers`` x ``cores`` cores and ``memory`` (a Spark size,
    per worker), as ``sessionsched cluster up`` takes them, or ``worker_groups``
    (``WorkerGroup``: workers not all alike, with custom resources such as GPUs); seconds
    before a driver / an executor is up; ``spark.dynamicAllocation.executorIdleTimeout``; the
    seconds an app works unless ``spark.sessionsched.memory.work`` says otherwise
    (``backends/memory/job.py``).
    ``kubernetes``: the ``kubernetes`` backend's settings (``KubernetesSection``).
    ``dir``: the ``local`` backend's: where ``sessionsched cluster up --dir`` recorded the
    cluster (default ``<server.state_dir>/cluster``); one each when several are served."""

    backend: Literal["standalone", "local", "memory", "kubernetes"] = "standalone"
    master: str = "spark://127.0.0.1:7077"
    master_ui: str = "http://127.0.0.1:8080"
    driver_slots: int | None = Field(None, ge=1)
    workers: int = Field(1, ge=1, le=MAX_WORKERS)
    cores: int = Field(2, ge=1)
    memory: Annotated[int, BeforeValidator(_mem_mib), Field(ge=1)] = 2048
    worker_groups: list[WorkerGroup] | None = Field(None, min_length=1)
    driver_start_s: float = Field(0.5, ge=0)
    executor_start_s: float = Field(0.5, ge=0)
    executor_idle_timeout_s: float = Field(60.0, gt=0)
    work_s: float = Field(2.0, ge=0)
    kubernetes: KubernetesSection | None = None
    dir: str | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _memory_settings(self) -> ClusterSection:
        if self.backend != "memory":
            for key in MEMORY_ONLY:
                if key in self.model_fields_set:
                    raise ValueError(f"{key} is a setting of the memory backend only "
                                     f"(backend is {self.backend})")
        if self.dir is not None and self.backend != "local":
            raise ValueError(f"dir is a setting of the local backend only (backend is "
                             f"{self.backend})")
        no_equal_workers_beside(self.worker_groups, self.model_fields_set)
        if self.backend == "kubernetes" and self.kubernetes is None:
            raise ValueError("backend kubernetes needs a cluster.kubernetes section (at least "
                             "image)")
        return self

class DefaultsSection(Strict):
    queue: str = "root.default"
    priority: int = PRIORITY_DEFAULT

    @field_validator("priority", mode="before")
    @classmethod
    def _priority(cls, v: Any) -> int:
        return parse_priority(v)
