"""The agent's probe reads a class's public methods in one py4j call (``ScalaRunTime.stringOf``
of ``getMethods()``, parsed by ``public_methods``) instead of one call per method: the same set,
on Spark's own classes, at a fraction of the round trips the SparkContext's constructor waited
for."""

from __future__ import annotations

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


@pytest.mark.cluster
def test_public_methods_matches_reflection_method_by_method_on_sparks_classes():
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway()
    try:
        jvm = gateway.jvm
        for name in ("org.apache.spark.ExecutorAllocationManager",
                     "org.apache.spark.scheduler.cluster.StandaloneSchedulerBackend"):
            methods = jvm.java.lang.Class.forName(name).getMethods()
            one_by_one = {(m.getName(), m.getParameterCount()) for m in methods}
            assert len(one_by_one) > 20
            assert public_methods(str(jvm.scala.runtime.ScalaRunTime.stringOf(methods))) \
                == one_by_one
    finally:
        gateway.shutdown()
        gateway.proc.stdin.close()  # the JVM exits when its stdin closes (pyspark's contract)
        gateway.proc.wait(30)
