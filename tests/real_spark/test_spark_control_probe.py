"""The agent's probe reads a class's public methods in one py4j call (``ScalaRunTime.stringOf``
of ``getMethods()``, parsed by ``public_methods``) instead of one call per method: the same set,
on Spark's own classes, at a fraction of the round trips the SparkContext's constructor waited
for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sessionsched.agent.spark_control import public_methods


@pytest.mark.parametrize("text,expected", [
    ("Array()", set()),
    ("Array(public int a.B.size())", {("size", 0)}),
    ("Array(public void a.B.kill(scala.collection.Seq,boolean,boolean,boolean), "
     "public scala.Option a.B.get(int) throws java.io.IOException)",
     {("kill", 4), ("get", 1)}),
    ("Array(public static void a.B$.org$apache$spark$x(int[],java.lang.String[]))",
     {("org$apache$spark$x", 2)}),
    ("Array(public final void a.B.wait(long,int) throws java.lang.InterruptedException, "
     "public final void a.B.wait() throws java.lang.InterruptedException)",
     {("wait", 2), ("wait", 0)}),
], ids=["none", "no parameters", "several and throws", "scala names and arrays", "overloads"])
def test_public_methods_reads_erased_signatures(text, expected):
    assert public_methods(text) == expected


# Run in a Python of its own: launching the gateway forks this process (pyspark's
# ``preexec_fn``), and a pytest worker that ran the Spark Connect tests before holds grpc's
# threads, whose fork handling once ended the child before it could start the JVM. Its own
# process also gives the JVM's standard error to the failure message.
PROBE = """
import json, sys
from pyspark.java_gateway import launch_gateway
from sessionsched.agent.spark_control import public_methods
gateway = launch_gateway()
try:
    jvm, out = gateway.jvm, {}
    for name in sys.argv[1:]:
        methods = jvm.java.lang.Class.forName(name).getMethods()
        one_by_one = sorted({(m.getName(), m.getParameterCount()) for m in methods})
        read = sorted(public_methods(str(jvm.scala.runtime.ScalaRunTime.stringOf(methods))))
        out[name] = [one_by_one, read]
    print(json.dumps(out))
finally:
    gateway.shutdown()
    gateway.proc.stdin.close()  # the JVM exits when its stdin closes (pyspark's contract)
    gateway.proc.wait(30)
"""
CLASSES = ("org.apache.spark.ExecutorAllocationManager",
           "org.apache.spark.scheduler.cluster.StandaloneSchedulerBackend")


@pytest.mark.cluster
def test_public_methods_matches_reflection_method_by_method_on_sparks_classes():
    done = subprocess.run([sys.executable, "-c", PROBE, *CLASSES], capture_output=True,
                          text=True, timeout=180, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(found) == sorted(CLASSES)
    for one_by_one, read in found.values():
        assert len(one_by_one) > 20
        assert read == one_by_one
