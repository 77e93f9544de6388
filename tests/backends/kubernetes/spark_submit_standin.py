"""A stand-in for ``spark-submit --deploy-mode cluster`` against the fake API server, for the
backend tests that are not about Spark itself (real spark-submit takes ~35 s a launch here;
``test_spark_submit.py`` runs the real one).

It makes the requests real Spark 4.0.1 makes (``test_spark_submit.py`` runs the real one):
POST the driver pod (name ``<app>-<hex>-driver``, Spark's labels plus
``spark.kubernetes.driver.label.*``, annotations, requests with the memory overhead), then
server-side apply the headless Service and the ``spark.properties`` ConfigMap owned by the
pod (on a failed apply it deletes the pod and exits 1, as Spark does), prints ``submission ID
NS:POD`` and exits 0. ``STANDIN_EXIT=N`` exits N before any request; ``STANDIN_DELAY_S``
sleeps first (a slow JVM).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import uuid

import httpx


def java_properties(conf: dict[str, str]) -> str:
    """``conf`` as java.util.Properties stores it (Spark's spark.properties)."""
    def esc(text: str) -> str:
        return re.sub(r"([=:\\#!])", r"\\\1", text)

    return "".join(f"{esc(k)}={esc(v)}\n" for k, v in sorted(conf.items()))


def main(argv: list[str]) -> int:
    time.sleep(float(os.environ.get("STANDIN_DELAY_S", "0")))
    if os.environ.get("STANDIN_EXIT"):
        print("stand-in: failing as told", file=sys.stderr)
        return int(os.environ["STANDIN_EXIT"])
    conf: dict[str, str] = {}
    master = name = None
    i = 0
    while i < len(argv):
        if argv[i] in ("--conf", "-c"):
            k, _, v = argv[i + 1].partition("=")
            conf[k] = v
            i += 2
        elif argv[i] == "--master":
            master = argv[i + 1]
            i += 2
        elif argv[i] == "--name":
            name = argv[i + 1]
            i += 2
        elif argv[i].startswith("--"):
            i += 2
        else:
            break
    api = master.removeprefix("k8s://")
    ns = conf.get("spark.kubernetes.namespace", "default")
    app_name = conf.get("spark.app.name") or name or "app"
    hexid = uuid.uuid4().hex
    pod = f"{re.sub(r'[^a-z0-9-]', '-', app_name.lower())[:40]}-{hexid[:16]}-driver"
    labels = {"spark-version": "4.0.1", "spark-app-selector": f"spark-{hexid}",
              "spark-app-name": app_name[:63], "spark-role": "driver"}
    prefix = "spark.kubernetes.driver.label."
    labels.update({k[len(prefix):]: v for k, v in conf.items() if k.startswith(prefix)})
    aprefix = "spark.kubernetes.driver.annotation."
    annotations = {k[len(aprefix):]: v for k, v in conf.items() if k.startswith(aprefix)}
    cores = conf.get("spark.driver.cores", "1")
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod, "labels": labels, "annotations": annotations},
            "spec": {"restartPolicy": "Never", "containers": [{
                "name": "spark-kubernetes-driver",
                "image": conf.get("spark.kubernetes.container.image", ""),
                "args": ["driver", "--properties-file", "/opt/spark/conf/spark.properties"],
                "resources": {"requests": {"cpu": cores, "memory": "1408Mi"},
                              "limits": {"memory": "1408Mi"}}}]}}
    with httpx.Client(base_url=api, timeout=10) as http:
        made = http.post(f"/api/v1/namespaces/{ns}/pods", json=body)
        if made.status_code != 201:
            print(f"stand-in: pod creation failed: {made.status_code} {made.text}",
                  file=sys.stderr)
            return 1
        owner = [{"apiVersion": "v1", "kind": "Pod", "name": pod, "controller": True,
                  "uid": made.json()["metadata"]["uid"]}]
        for resource, name_, extra in (
                ("services", f"{pod}-svc", {"spec": {"clusterIP": "None",
                                                     "selector": {"spark-app-selector":
                                                                  labels["spark-app-selector"]}}}),
                ("configmaps", f"spark-drv-{hexid[:16]}-conf-map",
                 {"immutable": True, "data": {"spark.properties": java_properties(conf)}})):
            kind = "Service" if resource == "services" else "ConfigMap"
            doc = {"apiVersion": "v1", "kind": kind,
                   "metadata": {"name": name_, "ownerReferences": owner}, **extra}
            r = http.patch(f"/api/v1/namespaces/{ns}/{resource}/{name_}",
                           params={"fieldManager": "fabric8", "force": "true"},
                           headers={"Content-Type": "application/apply-patch+yaml"},
                           content=json.dumps(doc))
            if r.status_code not in (200, 201):
                http.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{pod}",
                             json={"propagationPolicy": "Background"})
                print(f"stand-in: apply {resource} failed: {r.status_code}", file=sys.stderr)
                return 1
    print(f"submission ID {ns}:{pod}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
