"""``sessionsched submit``: spark-submit through the scheduler's queues.

``sessionsched submit [--server URL] [--queue Q] [--priority N] [--token T] [--ca PEM]
[--wait | --dry-run] [--upload|--no-upload] <spark-submit args…>``

Decisions, so that a spark-submit user gets no surprise:

- The wrapper's own options are taken from anywhere before the application file (after it,
  every argument is the app's). ``--queue`` is the scheduler's queue; spark-submit's
  ``--queue`` is YARN-only and means nothing on a standalone or Kubernetes cluster.
- Every other argument goes to the server unchanged, in order, and the server runs
  spark-submit with it. ``--master`` is refused: the scheduler picks the cluster. A
  ``spark.master`` from a properties file is dropped for the same reason.
- Python apps run in client mode (spark-submit cannot run a Python driver in cluster mode on
  standalone): ``--deploy-mode cluster`` with a ``.py`` file is refused here.
- The properties spark-submit would read on this host (``spark-defaults.conf``,
  ``--properties-file``, ``--conf``, the dedicated options) are resolved here, checked, and sent
  as ``conf``: the server may run with another ``SPARK_CONF_DIR``, but the app must get
  the settings its user sees. ``--priority``/``--queue`` win over ``spark.ego.priority``/
  ``spark.sessionsched.queue`` and are written into ``conf`` as those properties.
- The working directory is sent absolute, so relative paths resolve on the server.
- A server on another host (an address that is not loopback, or ``--upload``) cannot read
  this host's files: the application file and the local elements of ``--py-files``,
  ``--files`` and ``--jars`` are uploaded first (``PUT /api/v1/uploads/{sha256}``; content
  the server has already is not sent again), the server puts its stored copies in their
  place, and the driver runs in the stored application file's directory. A
  ``--properties-file`` is not sent: its properties are, resolved.
- ``--dry-run`` submits nothing (``POST /api/v1/apps/dry-run``): it prints whether the app
  fits the cluster at all, its place and why it would wait, and when it would start (and a
  counter-offer, docs/design/estimates.md); exit 1 if it can never fit.
- ``--wait`` follows the app until it ends and exits with its exit code: FINISHED gives the
  driver's code (0); FAILED a non-zero code (1 if the driver left none); KILLED 143 (SIGTERM's
  shell code) unless the driver left a non-zero code. A driver ended by signal N gives 128+N.
  Ctrl-C stops waiting, not the app.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

from rich.console import Console

from ..cli import UserError
from ..client import (
    App,
    SchedulerError,
    Submission,
    default_server,
)
from ..model import AppState, parse_priority
from ..spark.submit_args import (
    SPARK_SUBMIT_OPTIONS,
    SPARK_SUBMIT_SWITCHES,
    SparkArgsError,
    effective_properties,
    parse_spark_submit,
    scheduling_properties,
)
from .client_cmds import add_connection_options, connect, describe, user_error
from .dry_run import print_dry_run
from .follow import print_log_tail, wait_for

WRAPPER_OPTIONS = {"--server", "--queue", "--priority", "--token", "--ca"}  # take a value
WRAPPER_SWITCHES = {"--wait", "--dry-run", "--upload", "--no-upload", "--help", "-h"}
# The properties naming files spark-submit ships (as --py-files, --files, --jars do).
FILE_LISTS = {"spark.submit.pyFiles": "--py-files", "spark.files": "--files",
              "spark.jars": "--jars"}
# Environment a Python driver depends on; sent so the server launches it the same way.
# Not PYSPARK_DRIVER_PYTHON: it replaces the driver's program (a Jupyter setting would start
# a notebook instead of the app), and the server's auth.env_allow refuses it by default.
FORWARDED_ENV = ("PYSPARK_PYTHON",)
KILLED_EXIT = 143


def split_wrapper_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """(wrapper arguments, spark-submit arguments), each in their original order.

    Walks spark-submit's grammar so that an option's value is never mistaken for a wrapper
    option, and stops at the application file: the app's own arguments are left alone.
    """
    ours: list[str] = []
    spark: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0] if arg.startswith("--") else arg
        if name in WRAPPER_OPTIONS:
            ours.append(arg)
            if "=" not in arg and i + 1 < len(argv):
                i += 1
                ours.append(argv[i])
        elif name in WRAPPER_SWITCHES:
            ours.append(arg)
        elif name in SPARK_SUBMIT_OPTIONS or arg == "-c":
            spark.append(arg)
            if "=" not in arg and i + 1 < len(argv):
                i += 1
                spark.append(argv[i])
        elif name in SPARK_SUBMIT_SWITCHES or arg.startswith("-"):
            spark.append(arg)  # unknown options are reported by the spark-submit parser
        else:
            spark.extend(argv[i:])
            break
        i += 1
    return ours, spark


def _local_path(resource: str, cwd: str) -> Path | None:
    """The file behind an application resource on this host; None for remote URIs
    (hdfs:, s3a:, http:, local: — those are for the cluster to fetch)."""
    if resource.startswith("file://"):
        return Path(resource.removeprefix("file://"))
    if resource.startswith("file:"):
        return Path(resource.removeprefix("file:"))
    if ":" in resource.split("/", 1)[0]:
        return None
    return Path(cwd, resource)


def wants_upload(choice: bool | None, server: str) -> bool:
    """Upload local files with the submission? ``--upload``/``--no-upload``, else when the
    server is not on this host (its address is not loopback)."""
    if choice is not None:
        return choice
    host = urlsplit(server if "//" in server else f"//{server}").hostname or ""
    if host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True


def local_files(submission: Submission) -> dict[str, Path]:
    """The files to upload for a submission to another host: reference as written -> the
    file here. The application file and each element of ``--py-files``/``--files``/``--jars``
    (options or properties) that is a path on this host; URIs (``hdfs:``, ``local:`` ...) are
    the cluster's to fetch. UserError for one that is missing, unreadable or not a file."""
    spark = parse_spark_submit(list(submission.argv))
    refs: list[tuple[str, str]] = [("application file", spark.app_file)] if spark.app_file \
        else []
    for key, option in FILE_LISTS.items():
        value = (submission.conf or {}).get(key, "")
        refs += [(option, item.strip()) for item in value.split(",") if item.strip()]
    out: dict[str, Path] = {}
    for what, ref in refs:
        path = _local_path(ref, submission.cwd)
        if path is None or ref in out:
            continue
        if not path.is_file():
            raise UserError(f"{what} {ref} is not a file here ({path}); only files are uploaded")
        if not os.access(path, os.R_OK):
            raise UserError(f"{what} {path} is not readable")
        out[ref] = path
    return out


def without_properties_file(argv: list[str]) -> list[str]:
    """spark-submit arguments without ``--properties-file``/``--load-spark-defaults``: for
    another host, whose disk has not got the file; its properties travel resolved in ``conf``.
    """
    spark = parse_spark_submit(argv)
    out: list[str] = []
    for name, value in spark.options:
        if name in ("--properties-file", "--load-spark-defaults"):
            continue
        out += [name] if value is None else [name, value]
    if spark.app_file is not None:
        out += [spark.app_file, *spark.app_args]
    return out


def _refuse_dropped_options(spark) -> None:
    if spark.last("--master") is not None or "spark.master" in spark.conf:
        raise UserError(
            "--master is chosen by the scheduler; drop it (sessionsched submits to its cluster)"
        )
    if spark.last("--remote") is not None or "spark.remote" in spark.conf:
        raise UserError("--remote (Spark Connect) cannot be scheduled; drop it")
    for option, command in (("--status", "status"), ("--kill", "kill")):
        if spark.last(option) is not None:
            raise UserError(f"use 'sessionsched {command} ID' instead of spark-submit {option}")
    for switch in ("--version", "--usage-error"):
        if spark.has(switch):
            raise UserError(f"{switch} is not a submission; run spark-submit {switch} directly")


def plan_submission(
    wrapper: argparse.Namespace, spark_argv: list[str], environ: Mapping[str, str], cwd: str,
    remote: bool = False,
) -> Submission:
    """The request for POST /api/v1/apps, or UserError naming what is wrong. Pure but for
    reading the properties files and checking the application file exists. ``remote``: for a
    server on another host (its files are uploaded: ``local_files``)."""
    try:
        spark = parse_spark_submit(spark_argv)
        props = effective_properties(spark, environ, cwd)
        sched = scheduling_properties(props)
    except SparkArgsError as e:
        raise UserError(str(e)) from None
    _refuse_dropped_options(spark)
    if spark.app_file is None:
        raise UserError("no application file given: submit [options] <app.py|app.jar> [app args]")
    # A Python app's --deploy-mode cluster is the server's to judge: it knows the backend
    # (refused on a standalone cluster, a driver pod either way on Kubernetes).
    path = _local_path(spark.app_file, cwd)
    if path is not None:
        if not path.is_file():
            raise UserError(f"application file {spark.app_file} not found (looked in {cwd})")
        if not os.access(path, os.R_OK):
            raise UserError(f"application file {path} is not readable")

    conf = {key: prop.value for key, prop in props.items() if key != "spark.master"}
    priority = sched.priority
    if wrapper.priority is not None:
        try:
            priority = parse_priority(wrapper.priority)
        except ValueError as e:
            raise UserError(f"--priority: {e}") from None
        conf["spark.ego.priority"] = str(priority)
    queue = sched.queue
    if wrapper.queue is not None:
        queue = wrapper.queue.strip()
        if not queue:
            raise UserError("--queue: empty queue name")
        conf["spark.sessionsched.queue"] = queue

    name = conf.get("spark.app.name") or spark.last("--class") or Path(spark.app_file).name
    env = {k: environ[k] for k in FORWARDED_ENV if environ.get(k)}
    return Submission(
        argv=tuple(without_properties_file(spark_argv) if remote else spark_argv),
        cwd=str(Path(cwd).resolve()),
        queue=queue,
        priority=priority,
        name=name,
        conf=conf,
        env=env,
    )


# --- --wait -------------------------------------------------------------------------------------


def exit_code_of(app: App) -> int:
    """The process exit code that mirrors an ended app (see the module doc)."""
    code = app.exit_code
    if code is not None and code < 0:
        code = 128 - code  # killed by signal -code
    if app.state is AppState.FINISHED:
        return code or 0
    if app.state is AppState.FAILED:
        return code or 1
    return code or KILLED_EXIT


# --- the command ----------------------------------------------------------------------------------


def wrapper_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sessionsched submit",
        usage="sessionsched submit [--server URL] [--queue Q] [--priority N] [--token T] "
        "[--ca PEM] [--wait | --dry-run] [--upload|--no-upload] <spark-submit args…>",
        description="Submit a Spark application to the scheduler's queues. Every spark-submit "
        "argument (options, the application file, its arguments) passes through unchanged, "
        "except --master (the scheduler picks the cluster). Python apps run in client mode on "
        "the scheduler's host (on Kubernetes, as a driver pod). "
        "Wrapper options are taken from before the application file; after it, every argument "
        "is the app's. Properties are read from --conf, --properties-file and "
        "$SPARK_CONF_DIR/spark-defaults.conf as spark-submit does (spark.ego.priority, "
        "spark.ego.slots.max, spark.sessionsched.queue, ...). Prints the submission id.",
    )
    p.add_argument("--queue", metavar="Q", help="queue (sets spark.sessionsched.queue)")
    p.add_argument(
        "--priority", metavar="N", help="1..10000, higher first (sets spark.ego.priority)"
    )
    wait_or_test = p.add_mutually_exclusive_group()  # a dry run has nothing to wait for
    wait_or_test.add_argument(
        "--wait",
        action="store_true",
        help="follow the app's state and queue position until it ends; exit with its "
        "exit code (FAILED without one: 1, KILLED: 143); Ctrl-C stops waiting, not the app",
    )
    wait_or_test.add_argument(
        "--dry-run", action="store_true",
        help="store nothing: say whether the app fits the cluster at all, why it would wait "
        "and when it would start (Slurm's sbatch --test-only); exit 1 if it can never fit")
    upload = p.add_mutually_exclusive_group()
    upload.add_argument(
        "--upload", dest="upload", action="store_true", default=None,
        help="upload the application file and the local --py-files, --files and --jars with "
        "the submission (the default when the server's address is not loopback)")
    upload.add_argument(
        "--no-upload", dest="upload", action="store_false",
        help="send paths only: the server reads the files from its own disk (the default "
        "for a server on 127.0.0.1/localhost)")
    add_connection_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    ours, spark_argv = split_wrapper_args(args.args)
    wrapper = wrapper_parser().parse_args(ours)
    remote = wants_upload(wrapper.upload, wrapper.server or default_server())
    submission = plan_submission(wrapper, spark_argv, os.environ, os.getcwd(), remote)
    files = local_files(submission) if remote and not wrapper.dry_run else {}
    try:
        with connect(wrapper) as client:
            if wrapper.dry_run:  # the app file is not read: a remote one is not uploaded
                return print_dry_run(client, replace(submission, cwd="/") if remote
                                     else submission)
            if remote:
                submission = replace(submission, uploads={
                    ref: client.upload_file(path) for ref, path in files.items()})
            app = client.submit(submission)
            print(app.id, flush=True)
            print(describe(app), file=sys.stderr, flush=True)
            for warning in app.warnings:
                print(f"warning: {warning}", file=sys.stderr, flush=True)
            if not wrapper.wait:
                return 0
            try:
                app = wait_for(client, app.id, Console(stderr=True))
            except KeyboardInterrupt:
                print(
                    f"stopped waiting; {app.id} goes on (sessionsched kill {app.id} stops it)",
                    file=sys.stderr,
                )
                return 130
            if app.state is AppState.FAILED:
                print_log_tail(client, app.id)
            return exit_code_of(app)
    except SchedulerError as e:
        raise user_error(e) from None


def add_parser(subparsers) -> None:
    # spark-submit's grammar is not argparse's: take every argument raw, in order, and split
    # ours from spark-submit's in run() (wrapper_parser() then parses ours and gives --help).
    p = subparsers.add_parser(
        "submit",
        help="submit a Spark application (spark-submit arguments pass through)",
        prefix_chars="\0",
        add_help=False,
    )
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(func=run)
