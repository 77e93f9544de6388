"""The ``spark-submit --master k8s://... --deploy-mode cluster`` command a Launch becomes
(no IO but ``os.path`` checks).

What the backend adds to the app's properties (``Launch.conf`` and these win over the user's):

* ``spark.kubernetes.namespace`` (the namespace the backend watches) and the node selectors;
* labels on the driver and executor pods: ``sessionsched.io/app-id`` (the submission id: how
  a restarted scheduler finds its drivers), ``sessionsched.io/driver-in-cluster``, and the
  queue and priority as submitted (also as driver annotations, which take any text);
* ``spark.kubernetes.submission.waitAppCompletion=false``: spark-submit returns once the pod
  exists (its exit code would not tell a failed driver anyway: the pod's status does);
* dynamic allocation with shuffle tracking unless the user turned allocation off (Kubernetes
  has no external shuffle service);
* the driver's environment (``Launch.env``: the agent's app id, server URL and token) as
  ``spark.kubernetes.driverEnv.*``, with ``SESSIONSCHED_SERVER`` = ``server_url`` when set;
* only where the user set nothing: image, service account, pod template files,
  ``spark.kubernetes.file.upload.path``, and ``conf`` from the config.

Custom resources (GPUs) reach the pods as Spark's own limits (``extended``); an amount without
its vendor is refused here, in one line.

A Python app runs through the agent's bootstrap (``agent.launch.wrap_argv``), which in cluster
mode lives on the scheduler's host: the bootstrap is the primary resource, the agent zip is
added to ``--py-files``, and so is the user's script when it is a local file (its argument
becomes the file's name; the bootstrap finds it on the driver's ``sys.path``). Spark ships
local files through ``upload_path``; without one they are refused here, in one line.
A REST submission (JVM, cluster mode) becomes ``--class MAIN --conf ... RESOURCE ARGS``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlparse

from ...agent.launch import bootstrap_path
from ...config import KubernetesSection
from ...spark.submit_args import SparkArgsError, parse_spark_submit, spark_defaults_path
from ..base import Launch
from ..commands import submit_command
from .extended import vendor_missing
from .pods import LABEL_APP, LABEL_IN_CLUSTER, LABEL_PRIORITY, LABEL_QUEUE, valid_label_value

# REST request properties that name the standalone cluster, not the app.
_REST_DROP = {"spark.master", "spark.submit.deployMode", "spark.driver.supervise"}


def is_local_file(uri: str) -> bool:
    scheme = urlparse(uri).scheme
    return scheme in ("", "file") and not uri.startswith("local:")


def _rest_argv(request: Mapping) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """(argv, properties, environment) of a CreateSubmissionRequest."""
    props = {k: str(v) for k, v in (request.get("sparkProperties") or {}).items()
             if k not in _REST_DROP}
    if not request.get("mainClass"):
        raise ValueError("Main class is missing.")  # the Spark master's words
    argv = ["--class", str(request["mainClass"])]
    resource = str(request.get("appResource") or "")
    if not resource:
        raise ValueError("the REST request has no appResource")
    argv += [resource, *[str(a) for a in request.get("appArgs") or []]]
    return argv, props, {k: str(v) for k, v in (request.get("environmentVariables") or {}).items()}


def pod_conf(launch: Launch, settings: KubernetesSection) -> dict[str, str]:
    """The properties the backend adds, winning over the user's (see the module doc)."""
    out = {"spark.kubernetes.namespace": settings.namespace,
           "spark.kubernetes.submission.waitAppCompletion": "false"}
    pod_labels = {LABEL_APP: launch.app_id,
                  LABEL_IN_CLUSTER: "true" if launch.in_cluster else "false"}
    if launch.queue and valid_label_value(launch.queue):
        pod_labels[LABEL_QUEUE] = launch.queue
    if launch.priority is not None:
        pod_labels[LABEL_PRIORITY] = str(launch.priority)
    for role in ("driver", "executor"):
        for k, v in pod_labels.items():
            out[f"spark.kubernetes.{role}.label.{k}"] = v
    if launch.queue:
        out[f"spark.kubernetes.driver.annotation.{LABEL_QUEUE}"] = launch.queue
    if launch.priority is not None:
        out[f"spark.kubernetes.driver.annotation.{LABEL_PRIORITY}"] = str(launch.priority)
    for k, v in settings.node_selector.items():
        out[f"spark.kubernetes.node.selector.{k}"] = v
    for k, v in settings.driver_node_selector.items():
        out[f"spark.kubernetes.driver.node.selector.{k}"] = v
    return out


def defaults(settings: KubernetesSection) -> dict[str, str]:
    """Properties used only where nobody set them."""
    out = {"spark.kubernetes.container.image": settings.image}
    if settings.context:
        out["spark.kubernetes.context"] = settings.context
    if settings.service_account:
        out["spark.kubernetes.authenticate.driver.serviceAccountName"] = settings.service_account
    if settings.driver_pod_template:
        out["spark.kubernetes.driver.podTemplateFile"] = settings.driver_pod_template
    if settings.executor_pod_template:
        out["spark.kubernetes.executor.podTemplateFile"] = settings.executor_pod_template
    if settings.upload_path:
        out["spark.kubernetes.file.upload.path"] = settings.upload_path
    out.update(settings.conf)
    return out


def submit_argv(spark_submit: str, master: str, launch: Launch, settings: KubernetesSection,
                agent_zip: str) -> list[str]:
    """The command line. Raises ValueError with a one-line reason if it cannot be built."""
    env = dict(launch.env)
    if launch.rest_request is not None:
        argv, rest_props, rest_env = _rest_argv(launch.rest_request)
        conf = {**rest_props, **launch.conf}
        env = {**rest_env, **env}
    else:
        argv, conf = list(launch.argv), dict(launch.conf)
    if not argv:
        raise ValueError("nothing to launch (no spark-submit arguments)")
    try:
        args = parse_spark_submit(argv)
    except SparkArgsError as e:
        raise ValueError(str(e)) from None
    if args.app_file is None:
        raise ValueError("no application file in the spark-submit arguments")
    user = {**conf, **args.conf}
    if not _more_properties(args) and (missing := vendor_missing(
            {**defaults(settings), **user})) is not None:
        raise ValueError(missing)
    conf.update(pod_conf(launch, settings))
    if user.get("spark.dynamicAllocation.enabled", "true").strip().lower() != "false":
        conf["spark.dynamicAllocation.enabled"] = "true"
        conf.setdefault("spark.dynamicAllocation.shuffleTracking.enabled", "true")
    if settings.server_url:
        env["SESSIONSCHED_SERVER"] = settings.server_url
    for k, v in env.items():
        conf[f"spark.kubernetes.driverEnv.{k}"] = v
    if args.is_python and args.app_file == bootstrap_path():
        argv, conf = _ship_python(argv, args, conf, agent_zip)
    upload = conf.get("spark.kubernetes.file.upload.path") or args.conf.get(
        "spark.kubernetes.file.upload.path") or settings.upload_path
    if not upload:
        local = [f for f in _shipped(argv, conf) if is_local_file(f)]
        if local:
            raise ValueError(
                f"{os.path.basename(local[0])} is a local file and no upload path is set: set "
                "cluster.kubernetes.upload_path (spark.kubernetes.file.upload.path) so Spark "
                "can ship it to the driver pod")
    return submit_command(spark_submit, master, "cluster", argv, conf, defaults(settings))


def _more_properties(args) -> bool:
    """spark-submit reads properties from a file too (``--properties-file``, a
    spark-defaults.conf): what they set is not known here."""
    defaults_file = spark_defaults_path(os.environ)
    return args.last("--properties-file") is not None or (
        defaults_file is not None and defaults_file.is_file())


def _ship_python(argv, args, conf, agent_zip) -> tuple[list[str], dict[str, str]]:
    """bootstrap.py SCRIPT ARGS: the agent zip and a local SCRIPT go in ``--py-files``."""
    head = len(argv) - len(args.app_args) - 1
    script, rest = args.app_args[0], list(args.app_args[1:])
    py_files = [p for p in (conf.get("spark.submit.pyFiles") or args.last("--py-files")
                            or args.conf.get("spark.submit.pyFiles") or "").split(",") if p]
    py_files.append(agent_zip)
    if is_local_file(script):
        py_files.append(script)
        script = os.path.basename(urlparse(script).path)
    elif script.startswith("local://"):
        script = urlparse(script).path
    conf = {**conf, "spark.submit.pyFiles": ",".join(py_files)}
    return [*argv[:head], args.app_file, script, *rest], conf


def _shipped(argv: list[str], conf: Mapping[str, str]) -> list[str]:
    args = parse_spark_submit(argv)
    files = [args.app_file or ""]
    for key, opt in (("spark.submit.pyFiles", "--py-files"), ("spark.jars", "--jars"),
                     ("spark.files", "--files")):
        files += (conf.get(key) or args.last(opt) or "").split(",")
    return [f for f in files if f]
