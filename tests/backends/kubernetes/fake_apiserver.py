"""A fake Kubernetes API server for tests: small, stateful, and honest about what it is.

It is NOT a kube-apiserver. It keeps core/v1 objects in memory and answers the requests real
Spark 4.0.1 (fabric8) and the official ``kubernetes`` Python client make, as
``tests/backends/kubernetes/test_spark_submit.py`` runs them:

* objects: pods, services, configmaps, secrets, persistentvolumeclaims (namespaced) and nodes;
  each created object gets ``metadata.uid``, ``resourceVersion`` (one global counter, as etcd's
  revision) and ``creationTimestamp``; ``generateName`` works; a new pod is ``Pending``;
* verbs: list, get, create (409 AlreadyExists), replace (409 Conflict on a stale
  ``resourceVersion``), patch -- server-side apply (``application/apply-patch+yaml``, creating
  a missing object; ``fieldManager`` required; an ``immutable`` ConfigMap refuses changed data),
  JSON merge patch, and strategic merge patch approximated as a merge patch (lists replaced) --
  delete of one object or a collection by selector, with ``DeleteOptions`` bodies
  (``propagationPolicy`` Background/Foreground delete dependents, Orphan strips their owner
  references);
* label selectors (``=``, ``==``, ``!=``, ``in``, ``notin``, ``key``, ``!key``) and field
  selectors (``=``, ``==``, ``!=`` on the fields the real server supports for the resource,
  400 on others);
* watches over HTTP streaming (one JSON event a line) and WebSocket (one event a message), from
  a ``resourceVersion`` (history replayed; older than the kept history -> an ERROR event with
  410 Expired, as a real server answers after compaction) or from now (ADDED for what exists);
  ``timeoutSeconds`` ends the watch; objects entering or leaving a selector's set arrive as
  ADDED / DELETED, as the watch cache sends them;
* test hooks: seed nodes and foreign pods, move a pod's phase and container exit code,
  schedule pods onto nodes, inject errors (404, 409, 410, 500...) for matching requests, end
  every open watch and compact the history (so clients must re-list).

What it does not do: validation and defaulting beyond the above, admission (quotas,
LimitRanges), real apply field ownership and merge keys, a scheduler or kubelet (pods move only
when a test says so; deleted pods vanish at once, with no grace period), TLS, authentication,
RBAC, bookmarks.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import uvicorn
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

NAMESPACED = {
    "pods": "Pod",
    "services": "Service",
    "configmaps": "ConfigMap",
    "secrets": "Secret",
    "persistentvolumeclaims": "PersistentVolumeClaim",
}
CLUSTER = {"nodes": "Node", "namespaces": "Namespace"}
KINDS = {**NAMESPACED, **CLUSTER}
# Field selectors the real server accepts, per resource (the rest is 400 "not supported").
FIELDS = {
    "pods": {"metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
             "spec.schedulerName", "spec.serviceAccountName", "status.phase", "status.podIP",
             "status.nominatedNodeName"},
    "nodes": {"metadata.name", "spec.unschedulable"},
    "secrets": {"metadata.name", "metadata.namespace", "type"},
}
DEFAULT_FIELDS = {"metadata.name", "metadata.namespace"}
HISTORY = 2000  # watch events kept for replay; older resourceVersions get 410 Expired
DEFAULT_WATCH_S = 1800


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> dict:
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "details": self.details or {},
                "code": self.code}


REASONS = {400: "BadRequest", 404: "NotFound", 409: "Conflict", 410: "Expired",
           415: "UnsupportedMediaType", 422: "Invalid", 500: "InternalError",
           503: "ServiceUnavailable"}


# --- selectors ------------------------------------------------------------------------------

_SET_RE = re.compile(r"^\s*([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQ_RE = re.compile(r"^\s*([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)\s*$")
_EXISTS_RE = re.compile(r"^\s*(!?)\s*([\w./-]+)\s*$")


def _split_terms(selector: str) -> list[str]:
    """Commas separate terms, except inside ``in (a,b)``."""
    terms, depth, cur = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        terms.append(cur)
    return [t for t in terms if t.strip()]


def label_matcher(selector: str | None):
    """A predicate on a labels dict; ApiError 400 for a selector it cannot parse."""
    tests = []
    for term in _split_terms(selector or ""):
        if m := _SET_RE.match(term):
            key, op, values = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",")}
            if op == "in":
                tests.append(lambda lb, k=key, vs=values: lb.get(k) in vs)
            else:
                tests.append(lambda lb, k=key, vs=values: lb.get(k) not in vs)
        elif m := _EQ_RE.match(term):
            key, op, value = m.groups()
            if op == "!=":
                tests.append(lambda lb, k=key, v=value: lb.get(k) != v)
            else:
                tests.append(lambda lb, k=key, v=value: lb.get(k) == v)
        elif m := _EXISTS_RE.match(term):
            neg, key = m.groups()
            tests.append(lambda lb, k=key, n=bool(neg): (k in lb) != n)
        else:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {term!r}")
    return lambda labels: all(t(labels or {}) for t in tests)


def _field_value(obj: dict, path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def field_matcher(resource: str, selector: str | None):
    tests = []
    allowed = FIELDS.get(resource, DEFAULT_FIELDS)
    for term in _split_terms(selector or ""):
        m = re.match(r"^\s*([\w.]+)\s*(==|=|!=)\s*(.*?)\s*$", term)
        if not m:
            raise ApiError(400, "BadRequest", f"invalid field selector: {term!r}")
        path, op, value = m.groups()
        if path not in allowed:
            raise ApiError(400, "BadRequest",
                           f'field label not supported: {path}')
        if op == "!=":
            tests.append(lambda o, p=path, v=value: _field_value(o, p) != v)
        else:
            tests.append(lambda o, p=path, v=value: _field_value(o, p) == v)
    return lambda obj: all(t(obj) for t in tests)


# --- patches --------------------------------------------------------------------------------

def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: dicts merge, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- state ----------------------------------------------------------------------------------

@dataclass
class _Watcher:
    resource: str
    namespace: str | None
    labels: Any
    fields: Any
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue

    def matches(self, obj: dict | None) -> bool:
        if obj is None:
            return False
        meta = obj["metadata"]
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        return self.labels(meta.get("labels")) and self.fields(obj)

    def offer(self, etype: str, old: dict | None, new: dict) -> dict | None:
        """The event this watcher sees for a change from ``old`` to ``new`` (or None)."""
        was, now = self.matches(old), self.matches(new)
        if etype == "DELETED":
            return {"type": "DELETED", "object": new} if was or now else None
        if was and now:
            return {"type": etype, "object": new}
        if now:
            return {"type": "ADDED", "object": new}
        if was:  # left the selector's set: the watch cache sends DELETED
            return {"type": "DELETED", "object": new}
        return None

    def send(self, event: dict | None) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, event)


@dataclass
class _Fault:
    code: int
    method: str | None
    path: re.Pattern
    watch: bool | None
    times: int
    message: str


@dataclass
class Request_:  # one line of the request log
    method: str
    path: str
    query: str
    content_type: str
    body: Any = None


@dataclass
class _Change:
    rv: int
    resource: str
    etype: str
    old: dict | None
    new: dict


class ApiState:
    """The objects, their history and the open watches. Thread-safe: the server's event loop
    and the test's thread both use it."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.objects: dict[str, dict[tuple[str, str], dict]] = {r: {} for r in KINDS}
        self.rv = itertools.count(1)
        self.current_rv = 0
        self.history: deque[_Change] = deque(maxlen=HISTORY)
        self.compacted_rv = 0  # resourceVersions at or below this are gone from history
        self.watchers: list[_Watcher] = []
        self.faults: list[_Fault] = []
        self.requests: list[Request_] = []

    # changes -------------------------------------------------------------------------------
    def _bump(self, obj: dict) -> int:
        rv = next(self.rv)
        self.current_rv = rv
        obj["metadata"]["resourceVersion"] = str(rv)
        return rv

    def _record(self, resource: str, etype: str, old: dict | None, new: dict) -> None:
        rv = int(new["metadata"]["resourceVersion"])
        change = _Change(rv, resource, etype, old and copy.deepcopy(old), copy.deepcopy(new))
        if len(self.history) == self.history.maxlen:
            self.compacted_rv = self.history[0].rv
        self.history.append(change)
        for w in self.watchers:
            if w.resource == resource:
                event = w.offer(etype, change.old, change.new)
                if event is not None:
                    w.send(event)

    def create(self, resource: str, namespace: str | None, body: Any) -> dict:
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body of the request was not an object")
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata must be an object")
        kind = KINDS[resource]
        if obj.get("kind", kind) != kind:
            raise ApiError(400, "BadRequest", f"the kind {obj.get('kind')!r} does not match "
                           f"the resource {resource}")
        if namespace is not None:
            if meta.get("namespace", namespace) != namespace:
                raise ApiError(400, "BadRequest", "the namespace of the provided object does "
                               "not match the namespace sent on the request")
            meta["namespace"] = namespace
        name = meta.get("name")
        if not name and meta.get("generateName"):
            name = meta["generateName"] + uuid.uuid4().hex[:5]
            meta["name"] = name
        if not name or not isinstance(name, str):
            raise ApiError(422, "Invalid", f"{kind} is invalid: metadata.name: Required value",
                           {"kind": resource})
        with self.lock:
            key = (namespace or "", name)
            if key in self.objects[resource]:
                raise ApiError(409, "AlreadyExists", f'{resource} "{name}" already exists',
                               {"name": name, "kind": resource})
            obj["kind"], obj["apiVersion"] = kind, "v1"
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = _now()
            meta.pop("deletionTimestamp", None)
            if resource == "pods":
                obj.setdefault("status", {})
                obj["status"].setdefault("phase", "Pending")
            self._bump(obj)
            self.objects[resource][key] = obj
            self._record(resource, "ADDED", None, obj)
            return copy.deepcopy(obj)

    def get(self, resource: str, namespace: str | None, name: str) -> dict:
        with self.lock:
            obj = self.objects[resource].get((namespace or "", name))
            if obj is None:
                raise ApiError(404, "NotFound", f'{resource} "{name}" not found',
                               {"name": name, "kind": resource})
            return copy.deepcopy(obj)

    def replace(self, resource: str, namespace: str | None, name: str, body: Any,
                *, check_rv: bool = True) -> dict:
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body of the request was not an object")
        with self.lock:
            old = self.objects[resource].get((namespace or "", name))
            if old is None:
                raise ApiError(404, "NotFound", f'{resource} "{name}" not found',
                               {"name": name, "kind": resource})
            meta = body.get("metadata") or {}
            if meta.get("name", name) != name:
                raise ApiError(400, "BadRequest", "the name of the object does not match the "
                               "name on the URL")
            given = meta.get("resourceVersion")
            if check_rv and given and given != old["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {resource} '
                               f'"{name}": the object has been modified; please apply your '
                               'changes to the latest version and try again',
                               {"name": name, "kind": resource})
            if old.get("immutable") and (body.get("data") != old.get("data")
                                         or body.get("binaryData") != old.get("binaryData")):
                raise ApiError(422, "Invalid", f'{KINDS[resource]} "{name}" is invalid: data: '
                               "Forbidden: field is immutable when `immutable` is set")
            new = copy.deepcopy(body)
            new["kind"], new["apiVersion"] = KINDS[resource], "v1"
            keep = {k: old["metadata"][k] for k in ("uid", "creationTimestamp", "namespace")
                    if k in old["metadata"]}
            new["metadata"] = {**(new.get("metadata") or {}), **keep, "name": name}
            if resource == "pods" and "status" not in new:
                new["status"] = old.get("status", {})
            self._bump(new)
            self.objects[resource][(namespace or "", name)] = new
            self._record(resource, "MODIFIED", old, new)
            return copy.deepcopy(new)

    def patch(self, resource: str, namespace: str | None, name: str, patch: Any,
              content_type: str, field_manager: str | None) -> tuple[dict, int]:
        """(the object, 200 or 201): apply creates a missing object."""
        if not isinstance(patch, dict):
            raise ApiError(400, "BadRequest", "the patch is not an object")
        with self.lock:
            old = self.objects[resource].get((namespace or "", name))
            if content_type == "application/apply-patch+yaml":
                if not field_manager:
                    raise ApiError(400, "BadRequest",
                                   "PATCH requests with apply content type require fieldManager")
                if old is None:
                    body = copy.deepcopy(patch)
                    body.setdefault("metadata", {})["name"] = name
                    return self.create(resource, namespace, body), 201
            elif content_type not in ("application/merge-patch+json",
                                      "application/strategic-merge-patch+json"):
                raise ApiError(415, "UnsupportedMediaType",
                               f"the body of the request was in an unknown format - accepted "
                               f"media types include: application/apply-patch+yaml, "
                               f"application/merge-patch+json, "
                               f"application/strategic-merge-patch+json (got {content_type})")
            if old is None:
                raise ApiError(404, "NotFound", f'{resource} "{name}" not found',
                               {"name": name, "kind": resource})
            merged = merge_patch(old, patch)
            merged["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            return self.replace(resource, namespace, name, merged), 200

    def delete(self, resource: str, namespace: str | None, name: str,
               propagation: str | None = None) -> dict:
        with self.lock:
            obj = self.objects[resource].pop((namespace or "", name), None)
            if obj is None:
                raise ApiError(404, "NotFound", f'{resource} "{name}" not found',
                               {"name": name, "kind": resource})
            obj["metadata"]["deletionTimestamp"] = _now()
            self._bump(obj)
            self._record(resource, "DELETED", None, obj)
            self._cascade(obj["metadata"]["uid"], propagation or "Background")
            return copy.deepcopy(obj)

    def _cascade(self, owner_uid: str, propagation: str) -> None:
        """The garbage collector's work, done at once: dependents of a deleted owner go too
        (Background, Foreground), or lose the owner reference (Orphan)."""
        for resource, objs in self.objects.items():
            for (ns, name), obj in list(objs.items()):
                refs = obj["metadata"].get("ownerReferences") or []
                if not any(r.get("uid") == owner_uid for r in refs):
                    continue
                if propagation == "Orphan":
                    old = copy.deepcopy(obj)
                    obj["metadata"]["ownerReferences"] = [
                        r for r in refs if r.get("uid") != owner_uid]
                    self._bump(obj)
                    self._record(resource, "MODIFIED", old, obj)
                elif (ns, name) in objs:
                    self.delete(resource, ns or None, name, propagation)

    def select(self, resource: str, namespace: str | None, labels, fields) -> list[dict]:
        with self.lock:
            return [copy.deepcopy(o) for (ns, _), o in sorted(self.objects[resource].items())
                    if (namespace is None or ns == namespace)
                    and labels(o["metadata"].get("labels")) and fields(o)]

    # watches ---------------------------------------------------------------------------------
    def open_watch(self, w: _Watcher, since: str | None) -> list[dict]:
        """Register ``w``; the events it must see first (replay or initial ADDED)."""
        with self.lock:
            if since in (None, "", "0"):
                first = [{"type": "ADDED", "object": o} for o in
                         self.select(w.resource, w.namespace, w.labels, w.fields)]
            else:
                try:
                    rv = int(since)
                except ValueError:
                    raise ApiError(400, "BadRequest",
                                   f"invalid resource version {since!r}") from None
                if rv < self.compacted_rv:
                    first = [{"type": "ERROR", "object": ApiError(
                        410, "Expired",
                        f"too old resource version: {rv} ({self.compacted_rv})").status()}]
                    return first
                first = []
                for c in self.history:
                    if c.rv > rv and c.resource == w.resource:
                        event = w.offer(c.etype, c.old, c.new)
                        if event is not None:
                            first.append(event)
            self.watchers.append(w)
            return first

    def close_watch(self, w: _Watcher) -> None:
        with self.lock:
            if w in self.watchers:
                self.watchers.remove(w)

    def end_watches(self, compact: bool = True) -> None:
        """Every open watch ends now; with ``compact``, the history is dropped too, so a
        client that resumes from its last resourceVersion gets 410 Expired and must re-list."""
        with self.lock:
            if compact:
                self.history.clear()
                self.compacted_rv = self.current_rv + 1
            for w in self.watchers:
                w.send(None)
            self.watchers.clear()

    # faults ----------------------------------------------------------------------------------
    def take_fault(self, method: str, path: str, watch: bool) -> _Fault | None:
        with self.lock:
            for f in self.faults:
                if ((f.method is None or f.method == method) and f.path.search(path)
                        and (f.watch is None or f.watch == watch)):
                    f.times -= 1
                    if f.times <= 0:
                        self.faults.remove(f)
                    return f
        return None


# --- HTTP -----------------------------------------------------------------------------------

def _error(e: ApiError) -> JSONResponse:
    return JSONResponse(e.status(), status_code=e.code)


def _target(params: dict) -> tuple[str, str | None, str | None]:
    resource = params["resource"]
    namespace = params.get("namespace")
    if resource not in KINDS:
        raise ApiError(404, "NotFound", f"the server could not find the requested resource "
                       f"({resource})")
    cluster_scoped = resource in CLUSTER
    listing_all = namespace is None and params.get("name") is None  # e.g. GET /api/v1/pods
    if (namespace is not None and cluster_scoped) or (
            namespace is None and not cluster_scoped and not listing_all):
        raise ApiError(404, "NotFound", f"the server could not find the requested resource "
                       f"({resource})")
    return resource, namespace, params.get("name")


async def _read_body(request: Request) -> tuple[Any, str]:
    ctype = request.headers.get("content-type", "application/json").split(";")[0].strip()
    raw = await request.body()
    if not raw:
        return None, ctype
    try:
        if ctype == "application/apply-patch+yaml":
            return yaml.safe_load(raw), ctype
        return json.loads(raw), ctype
    except (ValueError, yaml.YAMLError) as e:
        raise ApiError(400, "BadRequest", f"the request body is not valid: {e}") from None


def _is_watch(request) -> bool:
    return request.query_params.get("watch", "").lower() in ("true", "1")


class FakeApiServer:
    """The fake, served by uvicorn on 127.0.0.1:``port`` in a background thread.

    ``url``: ``http://127.0.0.1:PORT``. Use as a context manager or ``start()``/``stop()``.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.state = ApiState()
        self._stopping = False
        routes = [
            Route("/version", self._version),
            Route("/api", self._api_versions),
            Route("/api/v1", self._resources),
        ]
        for prefix in ("/api/v1/namespaces/{namespace}/{resource}", "/api/v1/{resource}"):
            routes += [
                Route(prefix, self._collection, methods=["GET", "POST", "DELETE"]),
                WebSocketRoute(prefix, self._ws_watch),
                Route(prefix + "/{name}", self._item,
                      methods=["GET", "PUT", "PATCH", "DELETE"]),
            ]
        self.app = Starlette(routes=routes)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=port, log_level="warning",
                                lifespan="off", timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="fake-apiserver",
                                        daemon=True)

    # lifecycle -------------------------------------------------------------------------------
    def start(self, timeout: float = 15.0) -> FakeApiServer:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"fake API server did not start on port {self.port}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._stopping = True
        self.state.end_watches(compact=False)
        self._server.should_exit = True
        self._thread.join(10)

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # test hooks ------------------------------------------------------------------------------
    def add_node(self, name: str, cpu: str = "4", memory: str = "8Gi",
                 labels: dict[str, str] | None = None, ready: bool = True,
                 unschedulable: bool = False) -> dict:
        return self.state.create("nodes", None, {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  **(labels or {})}},
            "spec": {"unschedulable": unschedulable} if unschedulable else {},
            "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "conditions": [{"type": "Ready",
                                       "status": "True" if ready else "False"}]},
        })

    def add_pod(self, namespace: str, name: str, *, cpu: str = "1", memory: str = "1Gi",
                node: str | None = None, labels: dict[str, str] | None = None,
                phase: str = "Running") -> dict:
        """A pod someone else runs (a foreign workload), scheduled on ``node``."""
        self.state.create("pods", namespace, {
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu,
                                                                "memory": memory}}}],
                     **({"nodeName": node} if node else {})},
        })
        return self.set_pod_phase(namespace, name, phase)

    def set_pod_phase(self, namespace: str, name: str, phase: str,
                      exit_code: int | None = None, reason: str | None = None,
                      node: str | None = None) -> dict:
        """What a kubelet would report: ``phase``; each container running (Running) or
        terminated with ``exit_code`` (Succeeded: 0 unless given; Failed: 1 unless given)."""
        with self.state.lock:
            pod = self.state.get("pods", namespace, name)
            status = pod.setdefault("status", {})
            status["phase"] = phase
            if node:
                pod["spec"]["nodeName"] = node
            containers = [c["name"] for c in pod.get("spec", {}).get("containers", [])]
            if phase == "Running":
                state = {"running": {"startedAt": _now()}}
            elif phase in ("Succeeded", "Failed"):
                code = exit_code if exit_code is not None else (0 if phase == "Succeeded" else 1)
                state = {"terminated": {"exitCode": code, "reason": reason or (
                    "Completed" if code == 0 else "Error"), "finishedAt": _now()}}
            else:
                state = {"waiting": {"reason": reason or "ContainerCreating"}}
            status["containerStatuses"] = [
                {"name": c, "ready": phase == "Running", "restartCount": 0, "image": "",
                 "imageID": "", "state": state} for c in containers]
            return self.state.replace("pods", namespace, name, pod, check_rv=False)

    def fail(self, code: int, path: str, method: str | None = None, *, watch: bool | None = None,
             times: int = 1, message: str = "injected by the test") -> None:
        """The next ``times`` requests matching (``path`` a regex searched in the URL path)
        get ``code``. A watch gets 410 the way a real server sends it: an ERROR event."""
        self.state.faults.append(_Fault(code, method, re.compile(path), watch, times, message))

    def end_watches(self, compact: bool = True) -> None:
        self.state.end_watches(compact)

    def pods(self, namespace: str | None = None, selector: str | None = None) -> list[dict]:
        return self.state.select("pods", namespace, label_matcher(selector),
                                 field_matcher("pods", None))

    def get(self, resource: str, namespace: str | None, name: str) -> dict | None:
        try:
            return self.state.get(resource, namespace, name)
        except ApiError:
            return None

    @property
    def requests(self) -> list[Request_]:
        return list(self.state.requests)

    # handlers --------------------------------------------------------------------------------
    async def _version(self, request: Request) -> Response:
        return JSONResponse({"major": "1", "minor": "31", "gitVersion": "v1.31.0-fake",
                             "platform": "linux/amd64"})

    async def _api_versions(self, request: Request) -> Response:
        return JSONResponse({"kind": "APIVersions", "versions": ["v1"],
                             "serverAddressByClientCIDRs": []})

    async def _resources(self, request: Request) -> Response:
        return JSONResponse({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
            {"name": r, "namespaced": r in NAMESPACED, "kind": k,
             "verbs": ["create", "delete", "deletecollection", "get", "list", "patch",
                       "update", "watch"]} for r, k in KINDS.items()]})

    def _log(self, method: str, request: Request | WebSocket, ctype: str, body: Any) -> None:
        self.state.requests.append(Request_(method, request.url.path, request.url.query,
                                            ctype, body))

    def _fault(self, method: str, path: str, watch: bool) -> ApiError | None:
        f = self.state.take_fault(method, path, watch)
        if f is None:
            return None
        return ApiError(f.code, REASONS.get(f.code, "Unknown"), f.message)

    async def _collection(self, request: Request) -> Response:
        try:
            resource, namespace, _ = _target(request.path_params)
            body, ctype = await _read_body(request)
            self._log(request.method, request, ctype, body)
            watch = request.method == "GET" and _is_watch(request)
            fault = self._fault(request.method, request.url.path, watch)
            if fault is not None and not (watch and fault.code == 410):
                raise fault
            q = request.query_params
            labels = label_matcher(q.get("labelSelector"))
            fields = field_matcher(resource, q.get("fieldSelector"))
            if request.method == "POST":
                if resource in NAMESPACED and namespace is None:
                    raise ApiError(404, "NotFound", "namespace required")
                return JSONResponse(self.state.create(resource, namespace, body),
                                    status_code=201)
            if request.method == "DELETE":
                propagation = (body or {}).get("propagationPolicy") or q.get("propagationPolicy")
                gone = [self.state.delete(resource, o["metadata"].get("namespace"),
                                          o["metadata"]["name"], propagation)
                        for o in self.state.select(resource, namespace, labels, fields)]
                return JSONResponse(self._list(resource, gone))
            if watch:
                return self._http_watch(request, resource, namespace, labels, fields,
                                        expired=fault)
            return JSONResponse(self._list(resource, self.state.select(
                resource, namespace, labels, fields)))
        except ApiError as e:
            return _error(e)

    def _list(self, resource: str, items: list[dict]) -> dict:
        return {"kind": KINDS[resource] + "List", "apiVersion": "v1",
                "metadata": {"resourceVersion": str(self.state.current_rv)}, "items": items}

    async def _item(self, request: Request) -> Response:
        try:
            resource, namespace, name = _target(request.path_params)
            body, ctype = await _read_body(request)
            self._log(request.method, request, ctype, body)
            fault = self._fault(request.method, request.url.path, False)
            if fault is not None:
                raise fault
            if request.method == "GET":
                return JSONResponse(self.state.get(resource, namespace, name))
            if request.method == "PUT":
                return JSONResponse(self.state.replace(resource, namespace, name, body))
            if request.method == "PATCH":
                obj, code = self.state.patch(resource, namespace, name, body, ctype,
                                             request.query_params.get("fieldManager"))
                return JSONResponse(obj, status_code=code)
            propagation = (body or {}).get("propagationPolicy") or request.query_params.get(
                "propagationPolicy")
            return JSONResponse(self.state.delete(resource, namespace, name, propagation))
        except ApiError as e:
            return _error(e)

    def _open(self, request, resource, namespace, labels, fields, expired: ApiError | None):
        q = request.query_params
        timeout = float(q.get("timeoutSeconds") or DEFAULT_WATCH_S)
        w = _Watcher(resource, namespace, labels, fields, asyncio.get_running_loop(),
                     asyncio.Queue())
        if expired is not None:
            return w, [{"type": "ERROR", "object": expired.status()}], 0.0
        return w, self.state.open_watch(w, q.get("resourceVersion")), timeout

    async def _events(self, w: _Watcher, first: list[dict], timeout: float):
        """The watch's events until it times out or is ended (a None in its queue)."""
        try:
            for event in first:
                yield event
                if event["type"] == "ERROR":
                    return
            deadline = time.monotonic() + timeout
            while not self._stopping:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                try:
                    event = await asyncio.wait_for(w.queue.get(), left)
                except asyncio.TimeoutError:
                    return
                if event is None:
                    return
                yield event
        finally:
            self.state.close_watch(w)

    def _http_watch(self, request, resource, namespace, labels, fields, expired) -> Response:
        w, first, timeout = self._open(request, resource, namespace, labels, fields, expired)

        async def lines():
            async for event in self._events(w, first, timeout):
                yield json.dumps(event) + "\n"

        return StreamingResponse(lines(), media_type="application/json")

    async def _ws_watch(self, ws: WebSocket) -> None:
        try:
            resource, namespace, _ = _target(ws.path_params)
            q = ws.query_params
            labels = label_matcher(q.get("labelSelector"))
            fields = field_matcher(resource, q.get("fieldSelector"))
            self._log("WATCH-WS", ws, "websocket", None)
            fault = self._fault("GET", ws.url.path, True)
            w, first, timeout = self._open(ws, resource, namespace, labels, fields, fault)
        except ApiError:
            await ws.close(code=1008)
            return
        offered = ws.scope.get("subprotocols") or []
        await ws.accept(subprotocol=offered[0] if offered else None)
        try:
            async for event in self._events(w, first, timeout):
                await ws.send_text(json.dumps(event))
            await ws.close()
        except (WebSocketDisconnect, RuntimeError):
            pass  # the client went away


def free_port(lo: int = 21000, hi: int = 21999) -> int:
    """A free port of lo..hi drawn at random (not the first: tests running in parallel
    workers choose at the same time). The Kubernetes tests' range is below the kernel's
    ephemeral ports (32768-60999 on Linux), from which every outgoing connection draws its
    local port: a port found free there may be taken before the server binds it."""
    import random

    from sessionsched.backends.ports import free_port_in

    ports = range(lo, hi + 1)
    return free_port_in(random.sample(ports, len(ports)))
