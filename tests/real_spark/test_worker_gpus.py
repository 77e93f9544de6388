"""The shape of a real standalone worker's GPUs in the master's ``/json/``, as the standalone
backend reads it (``clusterview.workers_of``): a worker started with
``spark.worker.resource.gpu.amount=2`` and a discovery script printing
``{"name": "gpu", "addresses": ["0", "1"]}`` is a worker of 2 gpu, all free, beside a plain one.

A cluster of its own (one plain worker, ``started_cluster``) and a second worker the test
starts with the GPU settings and stops by PID: the session's ``spark_cluster`` is left as it is.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from sessionsched.backends import procs
from sessionsched.backends.clusterview import ClusterView, workers_of
from sessionsched.backends.local import WORKER_CLASS, LocalCluster
from sessionsched.backends.master import MasterClient
from sessionsched.backends.spark_home import spark_class, spark_home
from tests.sparkcluster import gpu_discovery_script, master_ports, started_cluster, wait_until

pytestmark = pytest.mark.cluster

JVM_S = 240  # bound on JVM starts on a loaded host


def test_a_workers_gpus_as_the_master_reports_them(tmp_path):
    def make() -> LocalCluster:
        port, rest_port, ui_port = master_ports()
        return LocalCluster(tmp_path / "cluster", workers=1, cores=1, memory="1g", port=port,
                            ui_port=ui_port, rest_port=rest_port, start_timeout_s=JVM_S)

    script = gpu_discovery_script(tmp_path, 2)
    conf = tmp_path / "gpu-worker.conf"
    conf.write_text(f"spark.worker.resource.gpu.amount 2\n"
                    f"spark.worker.resource.gpu.discoveryScript {script}\n")
    with started_cluster(make) as cluster:
        work = tmp_path / "gpu-worker"
        work.mkdir()
        env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": cluster.host}
        with open(tmp_path / "gpu-worker.log", "ab") as log:
            worker = subprocess.Popen(
                [spark_class(), WORKER_CLASS, "--host", cluster.host, "--cores", "1",
                 "--memory", "1g", "--work-dir", str(work), "--properties-file", str(conf),
                 cluster.master_url],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True)
        client = MasterClient(cluster.master_ui, timeout_s=5.0)
        try:
            wait_until(lambda: len(client.read_master().alive_workers()) == 2, JVM_S,
                       "the GPU worker to be ALIVE")
            sizes = sorted(((w.size, w.free) for w in workers_of(ClusterView(
                client.read_master(), ()))), key=lambda sf: sf[0].custom)
            gpus = (("gpu", 2),)
            assert [(s.cores, s.mem_mib, s.custom, f.custom) for s, f in sizes] == [
                (1, 1024, (), ()), (1, 1024, gpus, gpus)], (tmp_path / "gpu-worker.log")
        finally:
            client.close()
            procs.stop_group(procs.identify(worker.pid), grace_s=10.0)
            worker.wait(timeout=30)
