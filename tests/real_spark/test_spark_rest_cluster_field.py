"""Behind several clusters a Spark REST status answer names the app's ``cluster``, a field no
master sends: Spark 4.0.1's own parser (``SubmitRestProtocolMessage.fromJson``, what
spark-submit's ``RestSubmissionClient`` reads every answer with) takes the answer, drops the
field and validates it. Run in a JVM of PySpark's jars (no cluster); the answer comes from the
in-process server over two memory clusters (tests/service/clusters)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.service.clusters.test_two_clusters import Two, rest_submit, running, served
from tests.support.stepped_service import Clock

pytestmark = pytest.mark.cluster


# Spark's parser, in a Python of its own: pyspark's ``launch_gateway`` forks with a
# ``preexec_fn``, which in this worker's process (where the Connect tests' gRPC threads may run)
# once lost the JVM before it said its port.
PARSE = """
import json, sys
from pyspark.java_gateway import launch_gateway
gateway = launch_gateway()
try:
    message = gateway.jvm.org.apache.spark.deploy.rest.SubmitRestProtocolMessage.fromJson(
        sys.stdin.read())
    message.validate()
    print(json.dumps([message.messageType(), message.driverState(), message.submissionId(),
                      message.toJson()]))
finally:
    gateway.shutdown()
    gateway.proc.kill()
    gateway.proc.wait(30)
"""


def test_sparks_parser_takes_a_status_answer_naming_the_cluster(state_dir, tmp_path):
    with served(state_dir, Two(cores_on_a=4), tmp_path, Clock()) as s:
        sid = rest_submit(s, "on-b", **{"spark.sessionsched.cluster": "b"})
        running(s, [sid])
        raw = s.client.get(f"/v1/submissions/status/{sid}").text
    assert '"cluster" : "b"' in raw
    parsed = subprocess.run([sys.executable, "-c", PARSE], input=raw, capture_output=True,
                            text=True, timeout=180)
    assert parsed.returncode == 0, parsed.stderr[-3000:]
    kind, state, submission, again = json.loads(parsed.stdout.strip().splitlines()[-1])
    assert (kind, state, submission) == ("SubmissionStatusResponse", "RUNNING", sid)
    assert '"cluster"' not in again
