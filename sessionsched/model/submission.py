"""What a door submitted to launch an app, once accepted: one record from intake to launch.

``Submission`` holds the app's ``AppSpec`` (its identity and sizing, the one copy of them) and
what its launch needs that the engine does not: how it came in (``AppKind``), the spark-submit
arguments or Spark REST request, its conf, environment and working directory, who sent it and
the warnings it was given. The intake makes one without an identity (``new_apps``), the store's
writer gives it its id, sequence and submit time (``Service.submit``), the registry keeps it
(``service.registry.Submissions``) and the store keeps it in its row (``store.StoredApp``, the
submission plus the state that changes). Never changed once made: a reader holding one holds
a consistent record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import AppSpec


class AppKind:
    """How an application reached the scheduler (docs/user/api.md, "kind")."""

    SUBMIT = "submit"  # native API: spark-submit arguments, launched by the server
    REST = "rest"  # Spark REST CreateSubmissionRequest: a JVM app, driver in the cluster
    SESSION = "session"  # a notebook's driver, running in the notebook's own process
    CONNECT = "connect"  # a Spark Connect session: a Connect server driver, launched as submit

    ALL = (SUBMIT, REST, SESSION, CONNECT)


class IdentityFromSpec:
    """The app's identity read from its ``spec`` (there is no other copy of it)."""

    spec: AppSpec

    @property
    def id(self) -> str:
        return self.spec.app_id

    @property
    def seq(self) -> int:
        return self.spec.seq

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def user(self) -> str:
        return self.spec.user

    @property
    def queue(self) -> str:
        return self.spec.queue

    @property
    def submitted_at(self) -> float:
        return self.spec.submitted_at


@dataclass(frozen=True)
class Submission(IdentityFromSpec):
    spec: AppSpec  # its priority is the one submitted (or stored); the live one is the engine's
    kind: str
    argv: tuple[str, ...] = ()
    conf: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    rest_request: dict[str, Any] | None = None
    sender: str = ""
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Lists from a request or a row are kept as tuples: nothing changes them afterwards.
        object.__setattr__(self, "argv", tuple(self.argv))
        object.__setattr__(self, "warnings", tuple(self.warnings))
