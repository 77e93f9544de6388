"""The stack's two images, built once per change of what goes into them.

``ensure_images(client)`` tags both images with a hash of their build inputs (the files the
build context lets in, see ``.dockerignore``, the base image's id and the build arguments) and
builds only when that tag is missing: an unchanged tree costs two ``inspect`` calls, and a
change rebuilds from the first changed layer on (docker's layer cache). Older tags of these
test images are removed after a build, so they do not pile up.

The base: ``$SESSIONSCHED_BASE`` if set (e.g. ``debian:bookworm-slim`` where a registry is
reachable), else ``sessionsched/debian:bookworm``, made by ``docker/base.sh`` when missing.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import docker
import docker.errors

ROOT = Path(__file__).resolve().parents[3]
LOCAL_BASE = "sessionsched/debian:bookworm"
REPOS = {"spark": "sessionsched/spark", "sessionsched": "sessionsched/sessionsched"}  # compose's
TAG_PREFIX = "test-"  # the tests' tags; other tags (a user's `latest`) are never touched
# What the Dockerfile copies (the rest of the context is ignored: .dockerignore).
INPUTS = ("pyproject.toml", "README.md", ".dockerignore", "docker", "sessionsched")
BASE_TIMEOUT_S = 900


@dataclass(frozen=True)
class Images:
    spark: str
    sessionsched: str
    tag: str
    built_s: float | None  # None: both were there already


def input_files() -> list[Path]:
    files: list[Path] = []
    for name in INPUTS:
        path = ROOT / name
        found = sorted(path.rglob("*")) if path.is_dir() else [path]
        files += [f for f in found if f.is_file() and "__pycache__" not in f.parts
                  and f.suffix != ".pyc"]
    return files


def host_ca_bundle() -> Path | None:
    """The CA bundle pip uses on this host, which the build's pip must trust too (this
    machine reaches PyPI through a TLS-intercepting proxy whose CA is in it)."""
    for var in ("PIP_CERT", "SSL_CERT_FILE"):
        if os.environ.get(var) and Path(os.environ[var]).is_file():
            return Path(os.environ[var])
    return None


def context_files() -> dict[str, Path]:
    """Build context: its path -> the file. The repository's inputs and the host's CAs."""
    files = {str(f.relative_to(ROOT)): f for f in input_files()}
    bundle = host_ca_bundle()
    if bundle is not None:
        files["docker/ca-certificates/build-host.crt"] = bundle
    return files


def inputs_hash(files: dict[str, Path], base_id: str, build_args: dict[str, str]) -> str:
    h = hashlib.sha256()
    h.update(base_id.encode())
    h.update(repr(sorted(build_args.items())).encode())
    for name, f in sorted(files.items()):
        h.update(name.encode() + b"\0")
        h.update(f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def context_tar(files: dict[str, Path]) -> IO[bytes]:
    out = tempfile.TemporaryFile()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, f in sorted(files.items()):
            tar.add(f, arcname=name, recursive=False)
    out.seek(0)
    return out


def base_image(client: docker.DockerClient) -> docker.models.images.Image:
    name = os.environ.get("SESSIONSCHED_BASE", LOCAL_BASE)
    try:
        return client.images.get(name)
    except docker.errors.ImageNotFound:
        if name != LOCAL_BASE:
            raise RuntimeError(f"base image {name} (SESSIONSCHED_BASE) is not there") from None
    result = subprocess.run(["bash", str(ROOT / "docker" / "base.sh"), LOCAL_BASE],
                            capture_output=True, text=True, timeout=BASE_TIMEOUT_S)
    if result.returncode != 0:
        raise RuntimeError(f"docker/base.sh failed: {result.stderr.strip()[-800:]}")
    return client.images.get(LOCAL_BASE)


def _exists(client: docker.DockerClient, ref: str) -> bool:
    try:
        client.images.get(ref)
        return True
    except docker.errors.ImageNotFound:
        return False


def ensure_images(client: docker.DockerClient) -> Images:
    base = base_image(client)
    base_name = base.tags[0] if base.tags else base.id
    args = {"BASE": base_name}
    files = context_files()
    tag = TAG_PREFIX + inputs_hash(files, base.id, args)
    refs = {target: f"{repo}:{tag}" for target, repo in REPOS.items()}
    if all(_exists(client, ref) for ref in refs.values()):
        return Images(refs["spark"], refs["sessionsched"], tag, None)
    started = time.monotonic()
    for target, ref in refs.items():  # spark first: sessionsched builds on its layers
        try:
            # network_mode host: apt and pip reach the network the way the host does.
            with context_tar(files) as context:
                client.images.build(fileobj=context, custom_context=True,
                                    dockerfile="docker/Dockerfile", target=target,
                                    buildargs=args, tag=ref, network_mode="host", rm=True,
                                    forcerm=True)
        except docker.errors.BuildError as e:
            tail = "".join(str(c.get("stream", c.get("error", ""))) for c in e.build_log)
            raise RuntimeError(f"building {ref} failed: {e}\n{tail[-3000:]}") from None
    built_s = time.monotonic() - started
    _drop_older_tags(client, tag)
    return Images(refs["spark"], refs["sessionsched"], tag, built_s)


def _drop_older_tags(client: docker.DockerClient, keep: str) -> None:
    for repo in REPOS.values():
        for image in client.images.list(name=repo):
            for ref in image.tags:
                if ref.startswith(f"{repo}:{TAG_PREFIX}") and ref != f"{repo}:{keep}":
                    try:
                        client.images.remove(ref)
                    except docker.errors.APIError:
                        pass  # in use by a container left from another run: next time
