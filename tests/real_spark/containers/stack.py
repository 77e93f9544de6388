"""docker/compose.yaml run by testcontainers, service by service.

The compose file is resolved by the installed compose CLI (``docker compose config``, else
Debian's ``docker-compose config``: variables filled in, anchors expanded, paths made
absolute), and each resolved service becomes a ``DockerContainer`` with the same image,
command, environment, volumes and network mode, started in ``depends_on`` order. So the tests
run what users run, through testcontainers, on a machine whose compose cannot itself drive
testcontainers' ``DockerCompose`` (that needs the ``docker compose`` plugin).

Every container and volume started here carries ``LABEL``; ``remove_leftovers`` removes those
of an earlier run that could not clean up after itself (testcontainers' reaper, Ryuk, is an
image from a registry, so it is off).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import docker
import docker.errors
import yaml
from testcontainers.core.config import testcontainers_config
from testcontainers.core.container import DockerContainer

testcontainers_config.ryuk_disabled = True

COMPOSE_FILE = Path(__file__).resolve().parents[3] / "docker" / "compose.yaml"
LABEL = "sessionsched.tests"


def compose_cli() -> list[str]:
    docker_cli = shutil.which("docker")
    if docker_cli and subprocess.run([docker_cli, "compose", "version"],
                                     capture_output=True).returncode == 0:
        return [docker_cli, "compose"]
    legacy = shutil.which("docker-compose")
    if legacy:
        return [legacy]
    raise RuntimeError("no compose CLI: install docker-compose (Debian) or the compose plugin")


def resolve(env: Mapping[str, str]) -> dict[str, dict]:
    """The services of docker/compose.yaml as compose resolves them under ``env``."""
    result = subprocess.run([*compose_cli(), "-f", str(COMPOSE_FILE), "config"],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, **env})
    if result.returncode != 0:
        raise RuntimeError(f"compose config failed: {result.stderr.strip()}")
    return yaml.safe_load(result.stdout)["services"]


def start_order(services: Mapping[str, dict]) -> list[str]:
    order: list[str] = []

    def visit(name: str) -> None:
        if name not in order:
            for dep in services[name].get("depends_on") or ():
                visit(dep)
            order.append(name)

    for name in services:
        visit(name)
    return order


def _mounts(service: dict) -> Iterator[tuple[str, str, str]]:
    """(source, target, mode) of each volume, from compose's short or long syntax."""
    for v in service.get("volumes") or ():
        if isinstance(v, str):
            source, target, *mode = v.split(":")
            yield source, target, (mode[0] if mode else "rw")
        else:
            yield v["source"], v["target"], "ro" if v.get("read_only") else "rw"


@dataclass
class Stack:
    """The started containers by service name, and the named volumes made for them."""

    client: docker.DockerClient
    run_id: str
    containers: dict[str, DockerContainer] = field(default_factory=dict)
    volumes: list[str] = field(default_factory=list)

    def container(self, service: str):
        """The docker-py container behind a service."""
        return self.containers[service].get_wrapped_container()

    def logs(self, service: str, tail: int = 60) -> str:
        return self.container(service).logs(tail=tail).decode(errors="replace")

    def name_for(self, name: str) -> str:
        """The container or volume name of this run for a compose name."""
        return f"sessionsched-test-{self.run_id}-{name}"

    def start(self, services: Mapping[str, dict], extra_env: Mapping[str, str]) -> None:
        labels = {LABEL: self.run_id}
        for name in start_order(services):
            svc = services[name]
            c = DockerContainer(svc["image"]).with_name(self.name_for(name))
            if svc.get("command"):
                c.with_command(svc["command"])
            for key, value in {**(svc.get("environment") or {}), **extra_env}.items():
                c.with_env(key, str(value))
            for source, target, mode in _mounts(svc):
                if not source.startswith("/"):  # a named volume: one per test run
                    source = self.name_for(source)
                    if source not in self.volumes:
                        self.client.volumes.create(source, labels=labels)
                        self.volumes.append(source)
                c.with_volume_mapping(source, target, mode)
            kwargs: dict = {"labels": labels}
            if svc.get("network_mode"):
                kwargs["network_mode"] = svc["network_mode"]
            c.with_kwargs(**kwargs)
            self.containers[name] = c
            c.start()

    def check_running(self) -> None:
        """Fail at once, with its log, when a container of the stack has stopped."""
        for name in self.containers:
            container = self.container(name)
            container.reload()
            if container.status not in ("created", "running"):
                raise RuntimeError(f"{name} is {container.status}: {self.logs(name, 30)}")

    def stop(self) -> None:
        """Remove every container and volume of this run, whatever state they are in."""
        for c in reversed(list(self.containers.values())):
            try:
                c.stop()
            except docker.errors.APIError:
                pass
        for name in self.volumes:
            try:
                self.client.volumes.get(name).remove(force=True)
            except docker.errors.APIError:
                pass


def remove_leftovers(client: docker.DockerClient) -> None:
    for c in client.containers.list(all=True, filters={"label": LABEL}):
        c.remove(force=True, v=True)  # v: its anonymous volumes too
    for v in client.volumes.list(filters={"label": LABEL}):
        v.remove(force=True)


@contextmanager
def running_stack(client: docker.DockerClient, run_id: str, env: Mapping[str, str],
                  extra_env: Mapping[str, str]) -> Iterator[Stack]:
    """The stack of compose.yaml resolved under ``env``; ``extra_env`` is set in every
    container besides what compose gives it."""
    stack = Stack(client, run_id)
    try:
        stack.start(resolve(env), extra_env)
        yield stack
    finally:
        stack.stop()
