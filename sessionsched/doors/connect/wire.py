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

import base64
import binascii
import uuid
from dataclasses import dataclass, field
from typing import Any

import grpc
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


Metadata = list[tuple[str, str]] | tuple[tuple[str, str | bytes], ...]


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


class Refusal(Exception):
    """A call the door answers itself, with this status and message."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code


class BadRequest(ValueError):
    """A request the door cannot route: INVALID_ARGUMENT, with this one line."""


class Unimplemented(BadRequest):
    """A call of a method the service does not have: UNIMPLEMENTED."""


@dataclass(frozen=True)
class Routing:
    session_id: str
    user_id: str | None


def routing(method: Method, raw: bytes, whole: bool = True) -> Routing | None:
    """The session a request belongs to (a UUID, as Spark requires) and the user it names;
    ``raw`` the whole request, or (``whole`` False) its first bytes only: None if they end
    before both fields (a large request is not waited for whole: on a connection not yet
    passed on, the client sends no more than HTTP/2's first window)."""
    if whole:
        try:
            msg = method.request.FromString(raw)
        except Exception as e:  # protobuf's DecodeError and kin
            raise BadRequest(f"{method.path}: not a {method.request.__name__}: {e}") from None
        sid = msg.session_id
        user = msg.user_context.user_id if msg.HasField("user_context") else ""
    else:
        fields = _leading_fields(method, raw)
        if fields is None:
            return None
        sid = fields.get(1, b"").decode("utf-8", "replace")
        try:
            user = base_pb2.UserContext.FromString(fields[2]).user_id if 2 in fields else ""
        except Exception as e:  # protobuf's DecodeError and kin
            raise BadRequest(f"{method.path}: its user_context: {e}") from None
    if not _canonical_uuid(sid):
        raise BadRequest(f"session_id {sid[:64]!r} is not a UUID (8-4-4-4-12 hex digits, as "
                         "Spark requires)")
    return Routing(sid, user or None)


def _canonical_uuid(sid: str) -> bool:
    """Python reads a UUID in braces, after ``urn:uuid:`` or without its hyphens too; Spark's
    driver (Java's ``UUID.fromString``) refuses those, so such a session would queue an app
    whose driver then refuses its every call."""
    try:
        return str(uuid.UUID(sid)) == sid.lower()
    except ValueError:
        return False


def _leading_fields(method: Method, raw: bytes) -> dict[int, bytes] | None:
    """Fields 1 (``session_id``) and 2 (``user_context``) of every Connect request, read from
    the start of its bytes (a serializer writes fields in number order); None if cut short."""
    out: dict[int, bytes] = {}
    pos = 0
    while pos < len(raw):
        tag, pos = _varint(raw, pos)
        if tag is None:
            return None
        if tag >> 3 > 2:
            return out
        if tag & 7 != 2:
            raise BadRequest(f"{method.path}: not a {method.request.__name__}")
        n, pos = _varint(raw, pos)
        if n is None or pos + n > len(raw):
            return None
        out[tag >> 3] = raw[pos:pos + n]
        pos += n
    return out if 2 in out else None


def _varint(raw: bytes, pos: int) -> tuple[int | None, int]:
    value = shift = 0
    while pos < len(raw) and shift < 64:
        b = raw[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
    return None, pos


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
        if key.endswith("-bin"):  # binary: as it came (base64 text as read off the wire)
            out.append((key, value if isinstance(value, bytes) else _unbase64(key, value)))
        elif key == "authorization":
            authorization = value if authorization is None else authorization
        elif key not in NOT_FORWARDED and not key.startswith(":"):
            out.append((key, value))
    return authorization, tuple(out)


def _unbase64(key: str, text: str) -> bytes:
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4))  # gRPC may leave out the padding
    except binascii.Error as e:  # a client of its own making: gRPC's never sends one
        raise BadRequest(f"metadata {key}: not base64 ({e})") from None


def params(metadata) -> Params:
    """A call's metadata, read (module doc)."""
    md: dict[str, str] = {}
    for key, value in metadata or ():
        if not key.endswith("-bin"):
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
