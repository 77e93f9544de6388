"""What the Connect door reads of Spark Connect's wire: the service's methods, and the few
fields of a request that route it. Everything else passes through as serialized bytes.

- ``METHODS``: ``/spark.connect.SparkConnectService/NAME`` -> its ``Method`` (request type,
  streaming both ways or not), from the protos pyspark ships (``pyspark.sql.connect.proto``),
  so a method Spark adds is forwarded without a change here;
- ``Routing`` of a request: its ``session_id`` and ``user_context.user_id``;
- ``Params`` of a call's metadata: the connection string's extra parameters
  (``sc://host:15002/;token=T;user_id=U;queue=Q;priority=P``) reach the server as gRPC
  metadata; ``spark.sessionsched.queue`` and ``spark.ego.priority`` are accepted for
  ``queue`` and ``priority``; other ``spark.*`` keys become the driver's Spark properties
  (lower-case ones only: gRPC refuses metadata keys with capitals at the client).
  The token arrives as ``authorization: Bearer T`` (the client's call credentials).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import message_factory
from pyspark.sql.connect.proto import base_pb2

SERVICE = "spark.connect.SparkConnectService"
RELEASE_SESSION = f"/{SERVICE}/ReleaseSession"
CONFIG = f"/{SERVICE}/Config"
# Metadata a proxy must not copy onto its own call: the caller's token is ours, the rest is
# the transport's.
NOT_FORWARDED = {"authorization", "spark.sessionsched.token", "user-agent", "content-type",
                 "te", "grpc-accept-encoding", "grpc-encoding", "grpc-timeout"}
QUEUE_KEYS = ("queue", "spark.sessionsched.queue")
PRIORITY_KEYS = ("priority", "spark.ego.priority")
NOT_CONF = {"spark.sessionsched.token", "spark.master", *QUEUE_KEYS, *PRIORITY_KEYS}


@dataclass(frozen=True)
class Method:
    path: str
    request: Any  # the request's message class
    client_streaming: bool
    server_streaming: bool


def _methods() -> dict[str, Method]:
    service = base_pb2.DESCRIPTOR.services_by_name["SparkConnectService"]
    out = {}
    for m in service.methods:
        path = f"/{SERVICE}/{m.name}"
        out[path] = Method(path, message_factory.GetMessageClass(m.input_type),
                           m.client_streaming, m.server_streaming)
    return out


METHODS = _methods()


class BadRequest(ValueError):
    """A request the door cannot route: INVALID_ARGUMENT, with this one line."""


@dataclass(frozen=True)
class Routing:
    session_id: str
    user_id: str | None


def routing(method: Method, raw: bytes) -> Routing:
    """The session a request belongs to (a UUID, as Spark requires) and the user it names."""
    try:
        msg = method.request.FromString(raw)
    except Exception as e:  # protobuf's DecodeError and kin
        raise BadRequest(f"{method.path}: not a {method.request.__name__}: {e}") from None
    sid = getattr(msg, "session_id", "")
    try:
        uuid.UUID(sid)
    except ValueError:
        raise BadRequest(f"session_id {sid!r} is not a UUID") from None
    user = msg.user_context.user_id if msg.HasField("user_context") else ""
    return Routing(sid, user or None)


@dataclass(frozen=True)
class Params:
    authorization: str | None
    queue: str | None
    priority: str | None
    conf: dict[str, str] = field(default_factory=dict)
    forwarded: tuple[tuple[str, str], ...] = ()


def forwarded(metadata) -> tuple[str | None, tuple[tuple[str, str | bytes], ...]]:
    """(the call's ``authorization``, the metadata its driver gets): all a call of a session
    already routed reads of its metadata (``params`` reads the rest, when a session opens)."""
    authorization = None
    out = []
    for key, value in metadata or ():
        if isinstance(value, bytes):  # "-bin" keys: forwarded as they came
            out.append((key, value))
        elif key == "authorization":
            authorization = value if authorization is None else authorization
        elif key not in NOT_FORWARDED and not key.startswith(":"):
            out.append((key, value))
    return authorization, tuple(out)


def params(metadata) -> Params:
    """A call's metadata, read (module doc)."""
    md: dict[str, str] = {}
    for key, value in metadata or ():
        if not isinstance(value, bytes):
            md.setdefault(key, value)

    def first(keys: tuple[str, ...]) -> str | None:
        return next((md[k] for k in keys if md.get(k)), None)

    conf = {k: v for k, v in md.items() if k.startswith("spark.") and k not in NOT_CONF}
    return Params(md.get("authorization"), first(QUEUE_KEYS), first(PRIORITY_KEYS), conf,
                  forwarded(metadata)[1])


def release_session_response(session_id: str) -> bytes:
    """The door's own answer to ``ReleaseSession`` of a session with no driver (yet)."""
    return base_pb2.ReleaseSessionResponse(session_id=session_id).SerializeToString()


def set_config(session_id: str, user_id: str | None, pairs: dict[str, str]) -> bytes:
    """A ``Config`` request setting ``pairs`` in a session (the door's own call to a driver)."""
    request = base_pb2.ConfigRequest(session_id=session_id,
                                     user_context=base_pb2.UserContext(user_id=user_id or ""))
    for key, value in pairs.items():
        request.operation.set.pairs.add(key=key, value=value)
    return request.SerializeToString()
