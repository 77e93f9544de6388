"""The Kubernetes API server, asked directly (not through the informers): the client built
from ``cluster.kubernetes``, a driver pod found by its app's label (``adopt``), a driver pod
deleted (``stop``). Every failure is a one-line BackendError."""

from __future__ import annotations

import json
import os

from kubernetes import client, config
from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError

from ...config import KubernetesSection
from ..base import BackendError
from . import pods

REQUEST_TIMEOUT_S = (5.0, 10.0)  # (connect, read) for single requests from the loop


def api_client(settings: KubernetesSection) -> tuple[client.ApiClient, str, dict[str, str]]:
    """(the API client, the API server URL, environment spark-submit needs to reach it)."""
    cfg = client.Configuration()
    env: dict[str, str] = {}
    try:
        if settings.api_server:
            cfg.host = settings.api_server
        elif settings.kubeconfig:
            path = os.path.abspath(os.path.expanduser(settings.kubeconfig))
            if not os.path.isfile(path):
                raise BackendError(f"cluster.kubernetes.kubeconfig: {path} does not exist")
            config.load_kube_config(path, settings.context, client_configuration=cfg)
            env["KUBECONFIG"] = path  # spark-submit's client reads the same file
        else:
            config.load_incluster_config(client_configuration=cfg)
    except (config.ConfigException, OSError) as e:
        raise BackendError(f"cluster.kubernetes: cannot configure the API client: {e}") from None
    return client.ApiClient(cfg), cfg.host.rstrip("/"), env


def driver_pods(core: client.CoreV1Api, namespace: str, app_id: str) -> list[dict]:
    """The app's driver pods in ``namespace``, oldest first."""
    try:
        found = core.list_namespaced_pod(
            namespace, label_selector=f"{pods.LABEL_APP}={app_id},spark-role=driver",
            _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S)
        return sorted(json.loads(found.data).get("items") or [],
                      key=lambda p: p["metadata"].get("creationTimestamp") or "")
    except (ApiException, HTTPError, OSError, ValueError) as e:
        raise BackendError(f"cannot ask the Kubernetes API server: {e}") from None


def delete_pod(core: client.CoreV1Api, namespace: str, name: str) -> None:
    """Delete a driver pod as ``spark-submit --kill`` does (its executors, service and config
    map are owned by it: ``propagationPolicy: Background``); one already gone is no error."""
    try:
        core.delete_namespaced_pod(
            name, namespace, body=client.V1DeleteOptions(propagation_policy="Background"),
            _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S)
    except ApiException as e:
        if e.status != 404:
            raise BackendError(f"cannot delete driver pod {name}: {e.status} "
                               f"{e.reason}") from None
    except (HTTPError, OSError) as e:
        raise BackendError(f"cannot delete driver pod {name}: {e}") from None
