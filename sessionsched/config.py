"""YAML configuration -> validated, typed configuration.

Every error is reported as one line naming where it is and what is wrong, e.g.
``queues[0].queues[1].policy: 'fairness' is not one of fifo, priority, fairshare``.
The CLI prints that line and exits 2; nobody sees a traceback for a bad file.
"""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from .cron import cron_trigger  # the same parser the server runs plans with
from .model import PRIORITY_DEFAULT, Admission, Policy, Queue, parse_mem_mib, parse_priority


class ConfigError(ValueError):
    """A configuration that cannot be used. ``str()`` is the one-line message for the user."""


def _enum_value(enum: type[Enum], value: Any) -> Any:
    if isinstance(value, enum) or not isinstance(value, str):
        return value
    allowed = [m.value for m in enum]
    if value.strip().lower() not in allowed:
        raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
    return value.strip().lower()


def _reclaim_timeout(v: float) -> float:
    if v < 0 and v != -1:
        raise ValueError(f"{v} is not -1 (non-preemptive), 0 (kill now) or a positive timeout")
    return v


def _driver_fraction(v: float) -> float:
    if not 0 < v <= 1:
        raise ValueError(f"{v:g} is not a fraction of the queue's cores above 0 and at most 1")
    return v


# Field types shared by a queue and a plan's override of it: the same words, the same errors.
AdmissionField = Annotated[Admission, BeforeValidator(lambda v: _enum_value(Admission, v))]
PolicyField = Annotated[Policy, BeforeValidator(lambda v: _enum_value(Policy, v))]
ReclaimTimeout = Annotated[float, AfterValidator(_reclaim_timeout)]
DriverFraction = Annotated[float, AfterValidator(_driver_fraction)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class QueueConfig(_Strict):
    """One queue as written in YAML. Seconds are plain numbers; ``min_share``/``max_cores``
    are cores."""

    name: str
    queues: list[QueueConfig] = Field(default_factory=list)
    admission: AdmissionField = Admission.DEMAND
    starting_limit: int = Field(1, ge=1)
    starting_timeout: float = Field(300.0, gt=0)
    policy: PolicyField = Policy.FAIRSHARE
    weight: float = Field(1.0, gt=0)
    min_share: int = Field(0, ge=0)
    max_cores: int | None = Field(None, ge=1)
    max_running_apps: int | None = Field(None, ge=1)
    reclaim_timeout: ReclaimTimeout = 0.0
    max_driver_fraction: DriverFraction = 0.4
    # Who may submit into this queue (auth mode tokens): user names and groups of
    # ``auth.groups``; neither set: everyone. A parent's lists apply to a child that sets
    # neither.
    submit_users: list[str] | None = None
    submit_groups: list[str] | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v or "." in v or v != v.strip():
            raise ValueError(f"{v!r} is not a queue name (no dots, no surrounding spaces)")
        return v

    @model_validator(mode="after")
    def _unique_children(self) -> QueueConfig:
        seen: set[str] = set()
        for child in self.queues:
            if child.name in seen:
                raise ValueError(f"queue {self.name!r} has two children named {child.name!r}")
            seen.add(child.name)
        return self

    def to_queue(self, parent: str = "") -> Queue:
        full = f"{parent}.{self.name}" if parent else self.name
        return Queue(
            name=full,
            children=tuple(c.to_queue(full) for c in self.queues),
            admission=self.admission,
            starting_limit=self.starting_limit,
            starting_timeout_s=self.starting_timeout,
            policy=self.policy,
            weight=self.weight,
            min_share_cores=self.min_share,
            max_cores=self.max_cores,
            max_running_apps=self.max_running_apps,
            reclaim_timeout_s=self.reclaim_timeout,
            max_driver_fraction=self.max_driver_fraction,
        )


DEFAULT_QUEUES = [QueueConfig(name="root", queues=[QueueConfig(name="default")])]


def build_queue_tree(queues: list[QueueConfig]) -> Queue:
    """The root queue. A list that is not a single ``root`` is taken as root's children."""
    if len(queues) == 1 and queues[0].name == "root":
        return queues[0].to_queue()
    return QueueConfig(name="root", queues=queues).to_queue()


def resolve_queue(root: Queue, name: str) -> Queue:
    """A leaf queue by full path (``root.etl``), path without ``root.``, or unique leaf name.

    Raises LookupError naming the known leaf queues.
    """
    leaves = root.leaves()
    wanted = name.strip()
    for q in leaves:
        if wanted in (q.name, q.name.removeprefix("root.")):
            return q
    by_last = [q for q in leaves if q.name.rsplit(".", 1)[-1] == wanted]
    if len(by_last) == 1:
        return by_last[0]
    known = ", ".join(q.name for q in leaves)
    if any(q.name == wanted for q in root.walk()):
        raise LookupError(f"queue {name!r} is a parent queue; submit to a leaf queue: {known}")
    raise LookupError(f"unknown queue {name!r}; known queues: {known}")


class TlsSection(_Strict):
    """HTTPS: a PEM certificate (chain) and its private key. ``ca``: the CA certificate (PEM)
    that signed ``cert``, for a private CA or a self-signed certificate: the drivers the
    server launches get it (``SESSIONSCHED_CA``) so that their agents verify the server with
    it; without it they use the system's trust store."""

    cert: str
    key: str
    ca: str | None = None


class ServerSection(_Strict):
    """Where the service listens and keeps its state.

    ``db_url``: the store, ``sqlite:///PATH`` or ``postgresql://USER:PASSWORD@HOST:PORT/DB``
    (psycopg 3); default a SQLite file (WAL mode) in ``state_dir``. ``heartbeat_s``: how often
    driver agents report; an agent silent for three heartbeats no longer speaks for its app's
    executors (the cluster's view does).
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
    """

    host: str = "127.0.0.1"
    port: int = Field(6066, ge=1, le=65535)
    state_dir: str = "./.sessionsched"
    cycle_ms: int = Field(200, ge=10, le=500)
    db_url: str | None = None
    heartbeat_s: float = Field(1.0, gt=0, le=60)
    session_timeout: float = Field(600.0, gt=0)
    retained_ended_apps: int = Field(1000, ge=0)
    tls: TlsSection | None = None  # serve HTTPS (clients verify it: --ca)
    standby: bool = False
    advertise_url: str | None = None
    peers: list[str] = Field(default_factory=list)

    @field_validator("advertise_url")
    @classmethod
    def _advertised(cls, v: str | None) -> str | None:
        return _base_url(v) if v is not None else v

    @field_validator("peers")
    @classmethod
    def _peers(cls, v: list[str]) -> list[str]:
        return [_base_url(u) for u in v]


def _base_url(v: str) -> str:
    if not re.fullmatch(r"https?://[^/\s,]+", v.rstrip("/")):
        raise ValueError(f"{v!r}: expected http(s)://HOST:PORT")
    return v.rstrip("/")


class KubernetesSection(_Strict):
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


MEMORY_ONLY = ("workers", "cores", "memory", "driver_start_s", "executor_start_s",
               "executor_idle_timeout_s", "work_s")


class ClusterSection(_Strict):
    """The cluster backend (``backends.BACKENDS``). ``master``/``master_ui``: ``standalone``'s.
    The rest but ``driver_slots`` are the ``memory`` backend's (refused with another backend,
    where they would do nothing): ``workers`` x ``cores`` cores and ``memory`` (a Spark size,
    per worker), as ``sessionsched cluster up`` takes them; seconds before a driver / an
    executor is up; ``spark.dynamicAllocation.executorIdleTimeout``; the seconds an app works
    unless ``spark.sessionsched.memory.work`` says otherwise (``backends/memory/job.py``).
    ``kubernetes``: the ``kubernetes`` backend's settings (``KubernetesSection``)."""

    backend: Literal["standalone", "local", "memory", "kubernetes"] = "standalone"
    master: str = "spark://127.0.0.1:7077"
    master_ui: str = "http://127.0.0.1:8080"
    driver_slots: int = Field(4, ge=1)
    workers: int = Field(1, ge=1)
    cores: int = Field(2, ge=1)
    memory: Annotated[int, BeforeValidator(_mem_mib), Field(ge=1)] = 2048
    driver_start_s: float = Field(0.5, ge=0)
    executor_start_s: float = Field(0.5, ge=0)
    executor_idle_timeout_s: float = Field(60.0, gt=0)
    work_s: float = Field(2.0, ge=0)
    kubernetes: KubernetesSection | None = None

    @model_validator(mode="after")
    def _memory_settings(self) -> ClusterSection:
        if self.backend != "memory":
            for key in MEMORY_ONLY:
                if key in self.model_fields_set:
                    raise ValueError(f"{key} is a setting of the memory backend only "
                                     f"(backend is {self.backend})")
        if self.backend == "kubernetes" and self.kubernetes is None:
            raise ValueError("backend kubernetes needs a cluster.kubernetes section (at least "
                             "image)")
        return self


GROUP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
DEFAULT_ENV_ALLOW = ("PYSPARK_PYTHON", "SPARK_*", "TZ", "LANG", "LC_*")


class PriorityRange(_Strict):
    """The priorities a role may set, ``min``..``max`` within 1..10000."""

    min: int = Field(1, ge=1, le=10000)
    max: int = Field(10000, ge=1, le=10000)

    @model_validator(mode="after")
    def _ordered(self) -> PriorityRange:
        if self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        return self


class AuthSection(_Strict):
    """Who may do what (README, "Serve a team").

    ``mode``: ``none`` (everyone is the admin; the server listens on loopback only) or
    ``tokens`` (bearer tokens from ``tokens_file``, made with ``sessionsched token create``).
    ``anonymous``: with tokens, what a request without a token is: ``refuse`` (401, Spark
    REST: an ``ErrorResponse``) or a user name it is taken as, with user rights.
    ``user_priorities``/``admin_priorities``: the priorities each role may set (seed 003:
    users 1-5000, admins 1-10000). ``env_allow``: the environment variables a submission may
    pass to its driver (names, ``*`` patterns); the rest are refused. ``allowed_paths``: when
    set, a client-mode driver's application file must be under one of them.
    ``run_as_root``: drivers run as the server's own user (there is no per-user switch); with
    tokens, a server running as root does not start unless this is true.
    ``max_body_bytes``, ``max_string``: request size limits; ``submissions_per_minute``: per
    user (429 with Retry-After past it; 0: no limit). ``groups``: group name -> its users, for
    queues' ``submit_groups``.
    """

    mode: Literal["none", "tokens"] = "none"
    tokens_file: str | None = None
    anonymous: str = "refuse"
    user_priorities: PriorityRange = PriorityRange(min=1, max=5000)
    admin_priorities: PriorityRange = PriorityRange(min=1, max=10000)
    env_allow: list[str] = Field(default_factory=lambda: list(DEFAULT_ENV_ALLOW))
    allowed_paths: list[str] | None = None
    run_as_root: bool = False
    max_body_bytes: int = Field(1024 * 1024, ge=1024)
    max_string: int = Field(4096, ge=64)
    submissions_per_minute: int = Field(120, ge=0)
    groups: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("groups")
    @classmethod
    def _groups(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        from .tokens import TokenFileError, check_user

        for group, users in v.items():
            if not GROUP_NAME.fullmatch(group):
                raise ValueError(f"group name {group!r} must be 1-64 letters, digits or ._-")
            for user in users:
                try:
                    check_user(user)
                except TokenFileError as e:
                    raise ValueError(f"group {group}: {e}") from None
        return v

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, v: Any) -> Any:
        if isinstance(v, str) and v not in ("none", "tokens"):
            raise ValueError(f"{v!r} is not an auth mode; use none (loopback only) or tokens")
        return v

    @model_validator(mode="after")
    def _tokens(self) -> AuthSection:
        if self.mode == "tokens" and not self.tokens_file:
            raise ValueError("mode tokens needs tokens_file (made by 'sessionsched token "
                             "create --file PATH ...')")
        if self.anonymous != "refuse":
            from .tokens import TokenFileError, check_user

            try:
                check_user(self.anonymous)
            except TokenFileError as e:
                raise ValueError(f"anonymous: {e}; or 'refuse'") from None
        return self


class UploadsSection(_Strict):
    """Files a remote client uploads with a submission (README, "Serve a team"): stored once
    per content (SHA-256) under ``<state_dir>/uploads``.
    ``max_file_bytes``: one file; ``max_total_bytes``: everything stored; ``max_files``: per
    submission. ``orphan_grace_s``: a stored file no app in memory refers to is removed once it
    has not been uploaded, checked for or used for this long (an app forgotten by
    ``server.retained_ended_apps`` no longer refers to its files; keep it well above the
    seconds between a client's upload and its submission); ``sweep_s``: how often."""

    max_file_bytes: int = Field(256 * 1024 * 1024, ge=1024)
    max_total_bytes: int = Field(8 * 1024 * 1024 * 1024, ge=1024)
    max_files: int = Field(64, ge=1, le=1000)
    orphan_grace_s: float = Field(600.0, ge=0)
    sweep_s: float = Field(60.0, gt=0)

    @model_validator(mode="after")
    def _fits(self) -> UploadsSection:
        if self.max_file_bytes > self.max_total_bytes:
            raise ValueError(f"max_file_bytes {self.max_file_bytes} is above max_total_bytes "
                             f"{self.max_total_bytes}")
        return self


class DefaultsSection(_Strict):
    queue: str = "root.default"
    priority: int = PRIORITY_DEFAULT

    @field_validator("priority", mode="before")
    @classmethod
    def _priority(cls, v: Any) -> int:
        return parse_priority(v)


class QueueOverride(_Strict):
    """Queue settings a time-of-day plan changes; unset fields keep the configured value."""

    admission: AdmissionField | None = None
    starting_limit: int | None = Field(None, ge=1)
    starting_timeout: float | None = Field(None, gt=0)
    policy: PolicyField | None = None
    weight: float | None = Field(None, gt=0)
    min_share: int | None = Field(None, ge=0)
    max_cores: int | None = Field(None, ge=1)
    max_running_apps: int | None = Field(None, ge=1)
    reclaim_timeout: ReclaimTimeout | None = None
    max_driver_fraction: DriverFraction | None = None

    def changes(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True)


class PlanConfig(_Strict):
    """A time-of-day queue plan: from each time ``cron`` fires (5-field crontab, in
    ``timezone``, default the server's local zone), the queues run with the configured settings
    plus these ``queues`` overrides — until the next plan fires. Plans do not stack."""

    cron: str
    queues: dict[str, QueueOverride] = Field(default_factory=dict)
    timezone: str | None = None

    @model_validator(mode="after")
    def _cron(self) -> PlanConfig:
        try:
            cron_trigger(self.cron, self.timezone)
        except Exception as e:  # noqa: BLE001 - APScheduler raises ValueError or zone errors
            raise ValueError(f"cron {self.cron!r}: {e}") from None
        return self


def _full_names(queues: list[QueueConfig], parent: str = "") -> dict[str, QueueConfig]:
    out: dict[str, QueueConfig] = {}
    for q in queues:
        full = f"{parent}.{q.name}" if parent else q.name
        out[full] = q
        out.update(_full_names(q.queues, full))
    return out


def _root_configs(queues: list[QueueConfig]) -> list[QueueConfig]:
    if len(queues) == 1 and queues[0].name == "root":
        return queues
    return [QueueConfig(name="root", queues=queues)]


def resolve_any_queue(queues: list[QueueConfig], name: str) -> str:
    """The full path of a queue at any level (``root.etl`` or ``etl``), or LookupError."""
    names = _full_names(_root_configs(queues))
    wanted = name.strip()
    for candidate in (wanted, f"root.{wanted}"):
        if candidate in names:
            return candidate
    raise LookupError(f"unknown queue {name!r}; known queues: {', '.join(names)}")


def apply_overrides(
    queues: list[QueueConfig], overrides: dict[str, QueueOverride]
) -> list[QueueConfig]:
    """The queue configs with each override's changes applied (names as in a plan)."""
    wanted = {resolve_any_queue(queues, k): v.changes() for k, v in overrides.items()}

    def rebuild(q: QueueConfig, parent: str) -> QueueConfig:
        full = f"{parent}.{q.name}" if parent else q.name
        update = dict(wanted.get(full, {}))
        update["queues"] = [rebuild(c, full) for c in q.queues]
        return q.model_copy(update=update)

    return [rebuild(q, "") for q in _root_configs(queues)]


STANDBY_NEEDS_POSTGRESQL = ("server.standby: a standby needs a PostgreSQL store shared with "
                            "the leader (server.db_url: postgresql://...); SQLite serves one "
                            "scheduler only")


class ServerConfig(_Strict):
    """The server's YAML file (DESIGN.md, "Server configuration")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    server: ServerSection = ServerSection()
    cluster: ClusterSection = ClusterSection()
    auth: AuthSection = AuthSection()
    uploads: UploadsSection = UploadsSection()
    defaults: DefaultsSection = DefaultsSection()
    queues: list[QueueConfig] = Field(default_factory=lambda: list(DEFAULT_QUEUES))
    plans: list[PlanConfig] = Field(default_factory=list)

    @model_validator(mode="after")
    def _default_queue_exists(self) -> ServerConfig:
        try:
            resolve_queue(self.queue_tree(), self.defaults.queue)
        except LookupError as e:
            raise ValueError(f"defaults.queue: {e}") from None
        for full, q in _full_names(_root_configs(self.queues)).items():
            unknown = [g for g in q.submit_groups or () if g not in self.auth.groups]
            if unknown:
                raise ValueError(f"queue {full}: submit_groups names {unknown[0]!r}, which is not "
                                 "a group of auth.groups")
        for i, plan in enumerate(self.plans):
            for name in plan.queues:
                try:
                    resolve_any_queue(self.queues, name)
                except LookupError as e:
                    raise ValueError(f"plans[{i}].queues: {e}") from None
        if self.server.standby and not self.on_postgresql():
            raise ValueError(STANDBY_NEEDS_POSTGRESQL)
        return self

    def queue_tree(self, plan: PlanConfig | None = None) -> Queue:
        """The queue tree, with a time-of-day plan's overrides when one is given."""
        if plan is None:
            return build_queue_tree(self.queues)
        return build_queue_tree(apply_overrides(self.queues, plan.queues))

    def on_postgresql(self) -> bool:
        """The store is PostgreSQL (several schedulers may share it: one leads)."""
        return self.database_url().split(":", 1)[0].split("+", 1)[0] in ("postgresql",
                                                                          "postgres")

    def database_url(self) -> str:
        if self.server.db_url:
            return self.server.db_url
        return f"sqlite:///{Path(self.server.state_dir).resolve() / 'sessionsched.db'}"


def format_validation_error(err: ValidationError) -> str:
    """The first problem as ``path.to[0].field: message``."""
    first = err.errors()[0]
    path = ""
    for part in first["loc"]:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in ("function-after", "function-before") or str(part).startswith("function"):
            continue
        else:
            path += f".{part}" if path else str(part)
    msg = first["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    if first["type"] == "extra_forbidden":
        msg = "unknown setting"
    elif first["type"] == "missing":
        msg = "missing"
    more = len(err.errors()) - 1
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{path}: {msg}{tail}" if path else f"{msg}{tail}"


def load_yaml(path: str | Path) -> Any:
    """Parsed YAML, or ConfigError naming the file and the problem."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigError(f"{p}: cannot read: {e.strerror or e}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{p}:{where} not valid YAML: {getattr(e, 'problem', e)}") from None
    return {} if data is None else data


def parse_model(model: type[BaseModel], data: Any, source: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"{source}: {format_validation_error(e)}") from None


def load_server_config(path: str | Path | None) -> ServerConfig:
    if path is None:
        return ServerConfig()
    return parse_model(ServerConfig, load_yaml(path), str(path))
