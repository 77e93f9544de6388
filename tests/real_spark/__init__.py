"""The suites that run real Spark: a local standalone cluster's JVMs (the session's
``spark_cluster``, or a cluster a test starts of its own), or the compose stack in Docker, with
the scheduler, its doors, the CLI and the driver agent all at once. They cross every layer of
the package, so no one package folder of tests/ is theirs; and they are the suite's slow part
(40 s to minutes each, Java and Spark needed, markers ``cluster`` and ``containers``), so they
are kept together here, where one path runs them or leaves them out.

The tests of one package run in-process or on the memory backend, in tests/<package>/ as the
package is in sessionsched/ (tests/test_layers.py checks it). Here, by rig:

- this folder: tests on ``spark_cluster`` (tests/sparkcluster.py) or on a cluster of their own;
- ``agent_cluster/``: the driver agent's tests on their own 6-core cluster and server
  (``agent_cluster``, ``server``, ``api``), the PySpark apps they run in ``apps/``;
- ``clients/``: real clients (Airflow's Spark and Livy providers, pylivy, Spark Connect)
  through the doors, Airflow in a virtualenv of its own (``airflow_venv``);
- ``containers/``: the compose stack (docker/compose.yaml) built and run.
"""
