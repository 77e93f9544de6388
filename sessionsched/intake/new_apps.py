"""Submission requests in, checked app records out: no store, no engine, no clock (the one
outside fact read is the file system: a spark-submit run's working directory and application
file must exist on this host).

Three ways in, one result: a ``Submission`` whose spec has no id, sequence number or submit
time yet (the store's writer gives those), with ``warnings`` for the submitter:

- ``from_argv``: spark-submit arguments — the native API's ``POST /api/v1/apps`` (a working
  directory, ``conf``: the properties the client resolved: spark-defaults, properties file,
  ``--conf``; the body's ``queue``/``priority``, which win over the properties) and a Livy
  batch, which its door makes into spark-submit arguments;
- ``from_rest``: Spark's ``CreateSubmissionRequest`` (a JVM app whose driver runs in the
  cluster), with Conductor's optional top-level ``priority``;
- ``from_session``: a notebook asking to start its driver (``POST /api/v1/sessions``: the
  driver is its kernel, with its user), or a Livy session (its REPL driver on the scheduler's
  host).

Every refusal is a ``SubmissionError`` whose message is one line naming the problem. Nothing
here stores anything, so a refused submission leaves no trace.

Sizing read from the properties, with Spark's own defaults when unset: driver 1 core / 1g;
executors ``spark.executor.cores`` (default 1, set on the launch so the scheduler's count of
executors matches the cluster's) and ``spark.executor.memory`` (1g). With dynamic allocation on,
``minExecutors``/``maxExecutors`` bound the app; with it off (a static app) the cap is
``spark.executor.instances``, else ``spark.cores.max`` / executor cores. A gang
(``gang_properties.gang_from_conf``: ``spark.sessionsched.gang.*`` or YuniKorn's annotations) is
read here, malformed refused with its line, and may not ask for more executors than that cap.
Custom resources (GPUs: ``spark.{driver,executor,task}.resource.{name}.amount``) are read and
checked by Spark's rules here too (``spark.resource_props``): the driver's and the executors'
sizes carry them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sessionsched.config import resolve_queue
from sessionsched.engine.agent_terms import dynamic_allocation
from sessionsched.engine.clusters.federation import allowed_by_queue
from sessionsched.engine.tree import QueueTree
from sessionsched.model import (
    PRIORITY_DEFAULT,
    AppSpec,
    Gang,
    Queue,
    Resources,
    parse_priority,
)
from sessionsched.model.submission import AppKind, Submission
from sessionsched.model.text import one_line
from sessionsched.spark.gang_properties import SIZE as GANG_SIZE
from sessionsched.spark.gang_properties import gang_from_conf
from sessionsched.spark.resource_props import resource_ask
from sessionsched.spark.submit_args import (
    Prop,
    SchedulingProps,
    SparkArgsError,
    effective_properties,
    parse_spark_submit,
    scheduling_properties,
)

ANONYMOUS_USER = "anonymous"  # who unauthenticated submissions belong to (auth mode none)
USER_PROPERTY = "spark.sessionsched.user"
CLUSTER_PROPERTY = "spark.sessionsched.cluster"  # a or a,b: the clusters the app may run on
DEFAULT_MEM_MIB = 1024



class SubmissionError(ValueError):
    """A submission that cannot be accepted; ``str()`` is one line for the submitter, even
    when it quotes a file name or an argument with a newline in it."""

    def __init__(self, message: str):
        super().__init__(one_line(message))


@dataclass(frozen=True)
class Defaults:
    """What the server fills in: its queue tree and the config's ``defaults``."""

    root: Queue
    queue: str
    priority: int = PRIORITY_DEFAULT
    drivers_in_cluster: bool = False  # the backend's (``ClusterBackend.drivers_in_cluster``)
    # The clusters the server serves, listed order (``ServerConfig.cluster_registry``).
    clusters: tuple[str, ...] = ("default",)


# --- the three ways in ----------------------------------------------------------------------


def from_argv(
    argv: list[str],
    cwd: str,
    conf: Mapping[str, str],
    env: Mapping[str, str],
    queue: str | None,
    priority: Any,
    name: str | None,
    defaults: Defaults,
    check_file: bool = True,
    kind: str = AppKind.SUBMIT,
) -> Submission:
    """A native-API submission (kind ``submit``; ``connect``: a Spark Connect session's driver,
    launched the same way); ``check_file=False``: its application file need not be on this host
    (a dry run from another). On a backend whose drivers all run in the
    cluster (Kubernetes) every app is in-cluster; elsewhere the deploy mode says, and Python
    apps run in client mode on this host (a standalone master cannot run a Python driver)."""
    if not os.path.isabs(cwd):
        raise SubmissionError(f"cwd {cwd!r} is not an absolute path")
    if not os.path.isdir(cwd):
        raise SubmissionError(f"cwd {cwd} is not a directory on the scheduler's host")
    try:
        args = parse_spark_submit(argv)
        props: dict[str, Prop] = {k: Prop(v, "conf") for k, v in conf.items()}
        props.update(effective_properties(args, {}, cwd))
    except SparkArgsError as e:
        raise SubmissionError(str(e)) from None
    if args.last("--master") is not None:
        raise SubmissionError("--master is chosen by the scheduler; drop it from argv")
    if "spark.master" in conf:
        raise SubmissionError("spark.master is chosen by the scheduler; drop it from conf")
    if args.app_file is None:
        raise SubmissionError("no application file in argv (options, then app.py or app.jar)")
    if check_file:
        _check_app_file(args.app_file, cwd)
    sched = _scheduling(props)
    in_cluster = defaults.drivers_in_cluster or sched.deploy_mode == "cluster"
    if in_cluster and args.is_python and not defaults.drivers_in_cluster:
        raise SubmissionError(
            "Python apps run in client mode on a standalone cluster; drop --deploy-mode cluster"
        )
    app_name = name or _value(props, "spark.app.name") or args.last("--class")
    app_name = app_name or Path(args.app_file).name
    new = _new_app(
        kind=kind, name=app_name, props=props, sched=sched, in_cluster=in_cluster,
        queue=queue, priority=priority, defaults=defaults,
    )
    return replace(new, argv=tuple(argv), conf=dict(conf), env=dict(env), cwd=cwd)


REST_FIELDS = frozenset(
    "action appResource appArgs clientSparkVersion environmentVariables mainClass "
    "sparkProperties priority".split()
)


def from_rest(body: Any, defaults: Defaults) -> tuple[Submission, list[str]]:
    """A Spark REST CreateSubmissionRequest (kind ``rest``): (the app, unknown field names).

    Messages follow the Spark master's ("Main class is missing.", "Validation of message
    CreateSubmissionRequest failed!") with the cause added; the caller prefixes
    "Malformed request: ".
    """
    if not isinstance(body, dict):
        raise SubmissionError("expected a JSON object")
    action = body.get("action")
    if action is None:
        raise SubmissionError("Action field not found in JSON")
    if action != "CreateSubmissionRequest":
        raise SubmissionError(
            f"Validation of message {action} failed! expected action CreateSubmissionRequest"
        )
    failed = "Validation of message CreateSubmissionRequest failed!"
    for key, kind, what in (  # a value of another type is not a missing one: said apart
        ("appResource", str, "string"),
        ("mainClass", str, "string"),
        ("sparkProperties", dict, "object"),
        ("environmentVariables", dict, "object"),
        ("appArgs", list, "array"),
    ):
        if body.get(key) is not None and not isinstance(body[key], kind):
            raise SubmissionError(f"{failed} '{key}' must be a JSON {what}")
    resource = body.get("appResource")
    if not resource or not resource.strip():
        raise SubmissionError(f"{failed} 'appResource' is missing")
    main_class = body.get("mainClass")
    if not main_class or not main_class.strip():
        raise SubmissionError("Main class is missing.")
    spark_props = body.get("sparkProperties") or {}
    # Strings, as spark-submit sends them: they are forwarded to the master and the driver.
    for key in ("sparkProperties", "environmentVariables"):
        bad = [k for k, v in (body.get(key) or {}).items() if not isinstance(v, str)]
        if bad:
            raise SubmissionError(f"{failed} {key} values must be strings: {bad[0]}")
    bad_args = [i for i, a in enumerate(body.get("appArgs") or []) if not isinstance(a, str)]
    if bad_args:
        raise SubmissionError(f"{failed} appArgs must be strings: appArgs[{bad_args[0]}]")
    props = {k: Prop(v, "sparkProperties") for k, v in spark_props.items()}
    sched = _scheduling(props, failed)
    priority = body.get("priority")
    name = _value(props, "spark.app.name") or main_class
    new = _new_app(
        kind=AppKind.REST, name=name, props=props, sched=sched, in_cluster=True,
        queue=None, priority=priority, defaults=defaults,
    )
    unknown = [k for k in body if k not in REST_FIELDS]  # in the request's order, as a master
    return replace(new, rest_request=body, conf=dict(spark_props)), unknown


def from_session(
    name: str | None, queue: str | None, priority: Any, conf: Mapping[str, str],
    defaults: Defaults, on_host: bool = False,
) -> Submission:
    """A notebook's session (kind ``session``): its driver runs in the notebook's process -
    or, ``on_host``, on the scheduler's host (Livy's REPL driver)."""
    props = {k: Prop(v, "conf") for k, v in conf.items()}
    sched = _scheduling(props)
    new = _new_app(
        kind=AppKind.SESSION, name=name or _value(props, "spark.app.name") or "session",
        props=props, sched=sched, in_cluster=False, queue=queue, priority=priority,
        defaults=defaults,
    )
    if on_host:
        new = replace(new, spec=replace(new.spec, driver_with_user=False))
    return replace(new, conf=dict(conf))


# --- shared parts ---------------------------------------------------------------------------


def _value(props: Mapping[str, Prop], key: str) -> str | None:
    prop = props.get(key)
    return prop.value.strip() if prop is not None and prop.value.strip() else None


def _scheduling(props: Mapping[str, Prop], prefix: str = "") -> SchedulingProps:
    try:
        return scheduling_properties(props)
    except SparkArgsError as e:
        raise SubmissionError(f"{prefix} {e}".strip()) from None


def _gang(props: Mapping[str, Prop]) -> Gang | None:
    """The gang the properties ask for (``gang_properties.gang_from_conf``)."""
    try:
        return gang_from_conf({k: p.value for k, p in props.items()})
    except ValueError as e:
        raise SubmissionError(str(e)) from None


def _clusters(props: Mapping[str, Prop], leaf: str, defaults: Defaults) -> tuple[str, ...]:
    """The clusters the app asks for (``spark.sessionsched.cluster``; none: any its queue may
    use), refused here - before anything is stored - when one is unknown or when neither it
    nor its queue leaves it a cluster (docs/operator/clusters.md)."""
    value = _value(props, CLUSTER_PROPERTY)
    if value is None:
        return ()
    asked = tuple(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    known = defaults.clusters
    unknown = [n for n in asked if n not in known]
    if unknown or not asked:
        raise SubmissionError(f"{CLUSTER_PROPERTY}={value}: unknown cluster "
                              f"{(unknown or [value])[0]!r} (clusters: {', '.join(known)})")
    may = allowed_by_queue(QueueTree.of(defaults.root).path[leaf], known)
    if not any(n in may for n in asked):
        raise SubmissionError(f"{CLUSTER_PROPERTY}={value}: no cluster it may use: it asked for "
                              f"{', '.join(asked)}; its queue {leaf} may use {', '.join(may)}")
    return asked


def _check_app_file(resource: str, cwd: str) -> None:
    """The application file must exist and be readable here — unless it is a URI for the
    cluster to fetch (hdfs:, s3a:, http:, local:)."""
    if resource.startswith("file:"):
        path = Path(re.sub(r"^file:(//)?", "", resource))
    elif ":" in resource.split("/", 1)[0]:
        return
    else:
        path = Path(cwd, resource)
    if not path.is_file():
        raise SubmissionError(f"application file {resource} not found (looked in {cwd})")
    if not os.access(path, os.R_OK):
        raise SubmissionError(f"application file {path} is not readable")


def _new_app(
    *, kind: str, name: str, props: Mapping[str, Prop], sched: SchedulingProps,
    in_cluster: bool, queue: str | None, priority: Any, defaults: Defaults,
) -> Submission:
    warnings: list[str] = []
    if priority is not None and priority != "":
        try:
            prio = parse_priority(priority)
        except ValueError as e:
            raise SubmissionError(str(e)) from None
    else:
        prio = sched.priority if sched.priority is not None else defaults.priority
    try:
        leaf = resolve_queue(defaults.root, queue or sched.queue or defaults.queue)
    except LookupError as e:
        raise SubmissionError(str(e)) from None
    if sched.policy is not None and sched.policy.lower() != leaf.policy.value:
        warnings.append(
            f"spark.ego.app.schedule.policy={sched.policy} ignored: queue {leaf.name} "
            f"shares executors by its policy {leaf.policy.value}"
        )
    try:
        ask = resource_ask({k: p.value for k, p in props.items()})
    except ValueError as e:
        raise SubmissionError(str(e)) from None
    driver = Resources(sched.driver_cores or 1, sched.driver_mem_mib or DEFAULT_MEM_MIB,
                       ask.driver)
    executor = Resources(sched.executor_cores or 1, sched.executor_mem_mib or DEFAULT_MEM_MIB,
                         ask.executor)
    # On unless turned off; a JVM REST submission keeps what it asked for (the engine's rule).
    dynamic = dynamic_allocation(sched.dynamic_allocation, via_spark_rest=kind == AppKind.REST)
    if dynamic:
        min_execs = sched.min_executors or 0
        max_execs = sched.max_executors
    else:
        if kind != AppKind.REST:
            warnings.append(
                "spark.dynamicAllocation.enabled=false: a static app; the scheduler admits it "
                "and caps it but does not arbitrate its executors"
            )
        min_execs = 0
        max_execs = sched.executor_instances
        if max_execs is None and sched.cores_max is not None:
            max_execs = sched.cores_max // executor.cores
    if max_execs is not None and min_execs > max_execs:
        raise SubmissionError(
            f"spark.dynamicAllocation.minExecutors={min_execs} is above maxExecutors={max_execs}"
        )
    gang = _gang(props)
    asked = _clusters(props, leaf.name, defaults)
    user = _value(props, USER_PROPERTY) or ANONYMOUS_USER
    spec = AppSpec(
        app_id="", queue=leaf.name, seq=0, submitted_at=0.0, priority=prio, name=name,
        user=user, driver=driver, driver_in_cluster=in_cluster, executor=executor,
        min_executors=min_execs, max_executors=max_execs, slots_max=sched.slots_max,
        dynamic_allocation=dynamic, gang=gang, driver_with_user=kind == AppKind.SESSION,
        driver_overhead_mib=sched.driver_overhead_mib,
        interactive=kind in (AppKind.SESSION, AppKind.CONNECT), clusters=asked,
    )
    if gang is not None and spec.executor_cap is not None and gang.executors > spec.executor_cap:
        raise SubmissionError(
            f"a gang of {gang.executors} executors ({GANG_SIZE} or YuniKorn's minMember) is more"
            f" than the {spec.executor_cap} the app may hold (maxExecutors, "
            "spark.executor.instances, spark.cores.max or spark.ego.slots.max)")
    return Submission(spec=spec, kind=kind, warnings=tuple(warnings))
