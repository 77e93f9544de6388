"""The driver-side agent: runs inside a PySpark driver, reports facts, applies decisions.

Standard library + pyspark/py4j only, so it can ship as a zip in ``--py-files``. Modules:

* ``spark_control`` -- py4j access to Spark's allocation manager and scheduler backend (probe,
  facts, cap, kill, decommission);
* ``protocol`` / ``transport`` -- the wire format and JSON over urllib;
* ``reclaim`` -- carrying out reclaim orders once, deadlines included;
* ``agent`` -- the heartbeat loop (a daemon thread);
* ``attach`` -- hooking the loop onto SparkContext creation; ``bootstrap`` -- running a user's
  script with the hook installed; ``launch`` -- what the service adds to a submission;
  ``package`` -- the zip for ``--py-files``.

Nothing is imported here, so ``import sessionsched.agent`` costs nothing in a driver.
"""
