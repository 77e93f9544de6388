"""The bootstrap runs a user's script as if it were run directly, and the agent never breaks the
app: a local-mode Spark app (no allocation manager: admission-only) with the scheduler down
runs to completion. Real Python subprocesses and a real local-mode SparkContext."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap

from sessionsched.agent.launch import bootstrap_path
from sessionsched.agent.package import build_zip
from sessionsched.backends.ports import free_port

PY = sys.executable


def run(script, args, env=None, timeout_s=120):
    return subprocess.run(
        [PY, bootstrap_path(), str(script), *args],
        capture_output=True, text=True, timeout=timeout_s, cwd="/",
        env={**os.environ, **(env or {})},
    )


def test_script_sees_its_own_argv_name_and_path_and_its_exit_code_passes_through(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""
        import json, sys
        try:
            import protocol  # a module of the agent package: must not be importable here
            leaked = True
        except ImportError:
            leaked = False
        print(json.dumps({"argv": sys.argv, "name": __name__, "path0": sys.path[0],
                          "leaked": leaked}))
        sys.exit(7)
    """))
    out = run(script, ["a", "--b", "c"])
    assert out.returncode == 7, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"argv": [str(script), "a", "--b", "c"], "name": "__main__",
                    "path0": str(tmp_path), "leaked": False}


def test_an_exception_in_the_script_fails_the_run_with_its_traceback(tmp_path):
    script = tmp_path / "boom.py"
    script.write_text("raise RuntimeError('user bug')\n")
    out = run(script, [])
    assert out.returncode == 1
    assert "RuntimeError: user bug" in out.stderr


def test_admission_only_app_completes_while_the_scheduler_is_down(tmp_path):
    """local[1] has no ExecutorAllocationManager: the probe must say so, the agent must keep
    retrying a dead server (one warning per outage) and the job must still run."""
    script = tmp_path / "local_job.py"
    script.write_text(textwrap.dedent("""
        import time
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[1]").appName("probe")
                 .config("spark.ui.enabled", "false").getOrCreate())
        from sessionsched.agent.attach import current
        agent = current()
        print("CONTROL", agent.control.probe.control)
        total = spark.sparkContext.parallelize(range(100), 4).sum()
        deadline = time.monotonic() + 30
        while agent.failures < 3 and time.monotonic() < deadline:  # a few retries seen
            time.sleep(0.1)
        print("RESULT", total, "FAILURES", agent.failures)
        spark.stop()
    """))
    env = {
        "SESSIONSCHED_APP_ID": "driver-20261121000000-0001",
        "SESSIONSCHED_SERVER": f"http://127.0.0.1:{free_port()}",
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    out = run(script, [], env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "CONTROL admission-only" in out.stdout
    result = next(line for line in out.stdout.splitlines() if line.startswith("RESULT"))
    assert result.split()[1] == "4950"
    assert int(result.split()[3]) >= 3
    assert "executorAllocationManager() is empty: dynamic allocation is off" in out.stderr
    assert out.stderr.count("scheduler unreachable") == 1  # once per outage, not per retry


def test_the_agent_zip_alone_attaches_the_agent(tmp_path):
    """Shipped as a zip in --py-files (no sessionsched installed on the driver): the bootstrap,
    copied away from the source tree, imports the agent from the zip and the app runs."""
    zip_path = build_zip(str(tmp_path / "sessionsched-agent.zip"))
    boot = tmp_path / "bootstrap.py"
    shutil.copy(bootstrap_path(), boot)
    script = tmp_path / "zip_job.py"
    script.write_text(textwrap.dedent("""
        import sessionsched.agent.attach as attach
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[1]").appName("zip")
                 .config("spark.ui.enabled", "false").getOrCreate())
        print("FROM", attach.__file__)
        print("AGENT", attach.current().control.probe.control)
        print("RESULT", spark.sparkContext.parallelize(range(10), 2).sum())
        spark.stop()
    """))
    # -S: no site processing, so the editable install of sessionsched is invisible; pyspark and
    # py4j come from site-packages as a plain directory, the agent only from the zip.
    env = {**os.environ, "PYTHONPATH": f"{zip_path}:{sysconfig.get_paths()['purelib']}",
           "SESSIONSCHED_APP_ID": "driver-20261121000000-0002",
           "SESSIONSCHED_SERVER": f"http://127.0.0.1:{free_port()}", "SPARK_LOCAL_IP": "127.0.0.1"}
    out = subprocess.run([PY, "-S", str(boot), str(script)], capture_output=True, text=True,
                         timeout=120, cwd="/", env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
    assert lines["FROM"].startswith(zip_path + "/")
    assert lines["AGENT"] == "admission-only"
    assert lines["RESULT"] == "45"
