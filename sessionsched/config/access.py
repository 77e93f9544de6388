"""Who may do what (``auth``) and what a remote client may upload (``uploads``)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from .parsing import Strict

GROUP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
DEFAULT_ENV_ALLOW = ("PYSPARK_PYTHON", "SPARK_*", "TZ", "LANG", "LC_*")


class PriorityRange(Strict):
    """The priorities a role may set, ``min``..``max`` within 1..10000."""

    min: int = Field(1, ge=1, le=10000)
    max: int = Field(10000, ge=1, le=10000)

    @model_validator(mode="after")
    def _ordered(self) -> PriorityRange:
        if self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        return self


class AuthSection(Strict):
    """Who may do what (docs/operator/serving-a-team.md).

    ``mode``: ``none`` (everyone is the admin; the server listens on loopback only) or
    ``tokens`` (bearer tokens from ``tokens_file``, made with ``sessionsched token create``).
    ``anonymous``: with tokens, what a request without a token is: ``refuse`` (401, Spark
    REST: an ``ErrorResponse``) or a user name it is taken as, with user rights.
    ``user_priorities``/``admin_priorities``: the priorities each role may set (by default
    IBM Conductor's: users 1-5000, admins 1-10000). ``env_allow``: the environment variables
    a submission may pass to its driver (names, ``*`` patterns); the rest are refused.
    ``allowed_paths``: when set, a client-mode driver's application file must be under one of
    them.
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
        from ..config.tokens_file import TokenFileError, check_user

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
            from ..config.tokens_file import TokenFileError, check_user

            try:
                check_user(self.anonymous)
            except TokenFileError as e:
                raise ValueError(f"anonymous: {e}; or 'refuse'") from None
        return self


class UploadsSection(Strict):
    """Files a remote client uploads with a submission (docs/user/submit.md, "Submitting from
    another host"): stored once per content (SHA-256) under ``<state_dir>/uploads``.
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
