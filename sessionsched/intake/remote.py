"""A remote submission made local: its uploaded files put in place of the client's paths.

A client on another host sends its spark-submit arguments as it would run them, plus
``uploads``: each local file it uploaded (``uploads.UploadStore``), keyed by the reference as
written (``app.py``, ``/home/alice/lib/deps.zip``, ``file:/tmp/x.txt``) -> its SHA-256.
``rewrite`` replaces each reference, wherever spark-submit would read it as a file to ship:

1. the application file;
2. each element of ``--py-files``, ``--files`` and ``--jars`` (comma-separated lists);
3. the same lists as properties (``spark.submit.pyFiles``, ``spark.files``, ``spark.jars``), in
   ``--conf`` arguments and in the request's ``conf`` (the client resolves the options into
   it, and the launch gives ``conf`` precedence).

A reference must be found in one of those places (else 400, naming it); elements not
uploaded (``hdfs:``, ``local:`` ...) are left alone. Each file keeps its base name (spark-submit
reads ``.py``; ``--files`` are seen by the app under their names).

The working directory: the client's does not exist here, so with an uploaded application file
the driver runs in that file's stored directory (a relative path the app writes lands there);
otherwise in the client's directory if this host has it, else the uploads directory (an app
whose files are all URIs for the cluster: ``uploads`` is ``{}``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from sessionsched.intake.uploads import UploadError, check_sha
from sessionsched.spark.submit_args import SparkArgsError, parse_spark_submit

LIST_OPTIONS = {"--py-files": "spark.submit.pyFiles", "--files": "spark.files",
                "--jars": "spark.jars"}
LIST_PROPERTIES = frozenset(LIST_OPTIONS.values())


@dataclass(frozen=True)
class Local:
    """A submission with its uploaded files in place."""

    argv: list[str]
    conf: dict[str, str]
    cwd: str


def base_name(reference: str) -> str:
    """The file name spark-submit would see for a reference (``file:`` URIs too)."""
    path = reference.removeprefix("file://").removeprefix("file:")
    return PurePosixPath(path).name


def rewrite(argv: list[str], conf: Mapping[str, str], cwd: str, uploads: Mapping[str, str],
            place: Callable[[str, str], str], fallback_dir: str, max_files: int) -> Local:
    """See the module doc. ``place(sha, name)`` gives the stored path (``UploadStore.place``);
    ``fallback_dir``: the working directory when neither the app file nor the client's
    directory is here. Refusals are ``UploadError`` (400) naming the problem."""
    if len(uploads) > max_files:
        raise UploadError(f"{len(uploads)} uploaded files, at most {max_files} "
                          "(uploads.max_files)")
    for ref, sha in uploads.items():
        check_sha(sha)
        if not base_name(ref):
            raise UploadError(f"uploads: {ref[:80]!r} names no file")
    try:
        args = parse_spark_submit(argv)
    except SparkArgsError as e:
        raise UploadError(str(e)) from None
    placed: dict[str, str] = {}

    def local(ref: str) -> str:
        if ref not in uploads:
            return ref
        if ref not in placed:
            placed[ref] = place(uploads[ref], base_name(ref))
        return placed[ref]

    def in_list(value: str) -> str:
        return ",".join(local(item) for item in value.split(","))

    out: list[str] = []
    for name, value in args.options:
        out.append(name)
        if value is None:
            continue
        if name in LIST_OPTIONS:
            value = in_list(value)
        elif name == "--conf":
            key, _, v = value.partition("=")
            if key in LIST_PROPERTIES:
                value = f"{key}={in_list(v)}"
        out.append(value)
    app_file = args.app_file
    if app_file is not None:
        out.append(local(app_file))
        out.extend(args.app_args)
    new_conf = {k: in_list(v) if k in LIST_PROPERTIES else v for k, v in conf.items()}
    unused = [ref for ref in uploads if ref not in placed]
    if unused:
        raise UploadError(f"uploads: {unused[0][:200]!r} is not the application file nor in "
                          "--py-files, --files or --jars")
    if app_file is not None and app_file in placed:
        workdir = os.path.dirname(placed[app_file])
    elif os.path.isdir(cwd):
        workdir = cwd
    else:
        workdir = fallback_dir
    return Local(out, new_conf, workdir)
