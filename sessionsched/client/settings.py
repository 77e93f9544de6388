"""Where the client finds its scheduler, token and CA when the caller does not say: the
environment (``SESSIONSCHED_SERVER``, ``SESSIONSCHED_TOKEN``, ``SESSIONSCHED_CA``), then the
user's client file (``user_config_path``)."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from .errors import SchedulerError

DEFAULT_SERVER = "http://127.0.0.1:6066"
SERVER_ENV = "SESSIONSCHED_SERVER"
TOKEN_ENV = "SESSIONSCHED_TOKEN"
CA_ENV = "SESSIONSCHED_CA"
CONFIG_ENV = "SESSIONSCHED_CLIENT_CONFIG"
MAX_REDIRECTS = 3


def default_server(environ: Mapping[str, str] = os.environ) -> str:
    return environ.get(SERVER_ENV) or DEFAULT_SERVER


def user_config_path(environ: Mapping[str, str] = os.environ) -> Path:
    """``$SESSIONSCHED_CLIENT_CONFIG``, else ``$XDG_CONFIG_HOME/sessionsched/client.yaml``
    (``~/.config/...``)."""
    if environ.get(CONFIG_ENV):
        return Path(environ[CONFIG_ENV])
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "sessionsched" / "client.yaml"


def user_config(environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """The user's client file (``token:``, ``ca:``), or {} when there is none. It holds a
    secret: one that others may read is refused, as ssh refuses such a key."""
    path = user_config_path(environ)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise SchedulerError(f"{path}: cannot read: {e.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SchedulerError(f"{path} is readable by others (mode {stat.S_IMODE(mode):o}) and "
                             f"holds a token; run: chmod 600 {path}")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise SchedulerError(f"{path}: not a readable YAML file ({e})") from None
    if not isinstance(data, dict):
        raise SchedulerError(f"{path}: expected a mapping (token: ..., ca: ...)")
    return data


def default_token(environ: Mapping[str, str] = os.environ) -> str | None:
    """``$SESSIONSCHED_TOKEN``, else the user config file's ``token``."""
    token = environ.get(TOKEN_ENV) or user_config(environ).get("token")
    return str(token) if token else None


def default_ca(environ: Mapping[str, str] = os.environ) -> str | None:
    """A CA bundle to verify an HTTPS server with: ``$SESSIONSCHED_CA``, else the user config
    file's ``ca`` (None: the system's trust store)."""
    ca = environ.get(CA_ENV) or user_config(environ).get("ca")
    return str(ca) if ca else None
