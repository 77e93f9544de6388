"""The exact ``spark-submit`` command line, or REST request, a Launch becomes (no IO).

Property precedence, lowest first:
1. ``defaults``: what the backend adds only if nobody set it (on a loopback master:
   ``spark.driver.host=127.0.0.1``, so the driver does not bind to another address);
2. the user's own spark-submit options and ``--conf``s;
3. ``Launch.conf`` (the service's): it wins. spark-submit lets a dedicated option such as
   ``--executor-memory`` beat any ``--conf``, so a user option whose property is in
   ``Launch.conf`` is dropped (``Launch.conf`` already holds the user's value where the
   service did not change it), and the user's ``--conf``s of those keys too; ours come last.

``--master`` and ``--deploy-mode`` are always ours.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..spark.submit_args import OPTION_PROPERTIES, SparkArgsError, parse_spark_submit

_OURS = {"--master", "--deploy-mode"}
# Spark's own default for spark.redaction.regex: values of matching keys are not logged.
_SECRET = re.compile(r"(?i)secret|password|token|access[.]?key")


def submit_command(
    spark_submit: str,
    master: str,
    deploy_mode: str,
    user_argv: Sequence[str],
    conf: Mapping[str, str],
    defaults: Mapping[str, str] = {},  # noqa: B006 - read only
) -> list[str]:
    """The spark-submit command for ``user_argv`` (options, app file, app args).
    Raises ValueError with a one-line reason if the arguments cannot be used."""
    try:
        args = parse_spark_submit(list(user_argv))
    except SparkArgsError as e:
        raise ValueError(str(e)) from None
    if args.app_file is None:
        raise ValueError("no application file in the spark-submit arguments")
    user_opts: list[str] = []
    for name, value in args.options:
        if name in _OURS or OPTION_PROPERTIES.get(name) in conf:
            continue
        if name == "--conf" and value is not None and value.partition("=")[0] in conf:
            continue
        user_opts.append(name)
        if value is not None:
            user_opts.append(value)
    base = [
        f"{k}={v}" for k, v in defaults.items()
        if k not in conf and k not in args.conf and not _set_by_option(args.options, k)
    ]
    cmd = [spark_submit, "--master", master, "--deploy-mode", deploy_mode]
    for item in base:
        cmd += ["--conf", item]
    cmd += user_opts
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    return [*cmd, args.app_file, *args.app_args]


def _set_by_option(options: Sequence[tuple[str, str | None]], key: str) -> bool:
    return any(OPTION_PROPERTIES.get(name) == key for name, _ in options)


def rest_request(
    request: Mapping, master: str, conf: Mapping[str, str], env: Mapping[str, str]
) -> dict:
    """The CreateSubmissionRequest to forward to the real master.

    ``spark.master`` is set to the real master: the request came addressed to sessionsched
    (e.g. ``spark://host:6066``), and the master rewrites it only when it names the master's
    own REST port, so the driver would otherwise try to register with sessionsched.
    Raises ValueError if the request is not a CreateSubmissionRequest.
    """
    if not isinstance(request, Mapping) or request.get("action") != "CreateSubmissionRequest":
        raise ValueError("not a CreateSubmissionRequest")
    props = request.get("sparkProperties") or {}
    variables = request.get("environmentVariables") or {}
    if not isinstance(props, Mapping) or not isinstance(variables, Mapping):
        raise ValueError("sparkProperties and environmentVariables must be JSON objects")
    body = dict(request)
    body["sparkProperties"] = {**props, **conf, "spark.master": master}
    body["environmentVariables"] = {**variables, **env}
    return body


def redacted(cmd: Sequence[str]) -> list[str]:
    """``cmd`` fit for a log: ``--conf`` values of secret-looking keys replaced, as Spark does."""
    out = list(cmd)
    for i, arg in enumerate(out):
        key, sep, _ = arg.partition("=")
        if i > 0 and out[i - 1] in ("--conf", "-c") and sep and _SECRET.search(key):
            out[i] = f"{key}=*********(redacted)"
    return out
