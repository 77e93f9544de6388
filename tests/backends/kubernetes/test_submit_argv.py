"""The spark-submit command line a Launch becomes on Kubernetes (pure: no process, no API)."""

from __future__ import annotations

import pytest

from sessionsched.agent.launch import bootstrap_path, wrap_argv
from sessionsched.backends.base import Launch
from sessionsched.backends.kubernetes.submit import submit_argv
from sessionsched.config import KubernetesSection

SETTINGS = KubernetesSection(namespace="spark", image="spark:4.0.1", upload_path="s3a://b/u",
                             service_account="drv", server_url="http://sched:6066",
                             node_selector={"pool": "spark"},
                             driver_node_selector={"pool": "drivers"})


def confs(cmd: list[str]) -> dict[str, str]:
    return dict(cmd[i + 1].split("=", 1) for i, a in enumerate(cmd) if a == "--conf")


def test_python_app_ships_agent_and_script_and_names_the_script():
    launch = Launch(app_id="a1", name="a", argv=wrap_argv(
        ["--py-files", "s3a://b/lib.zip", "--conf", "spark.kubernetes.namespace=theirs",
         "/home/u/job.py", "--day", "1"]), env={"SESSIONSCHED_SERVER": "http://127.0.0.1:6066",
                                                "SESSIONSCHED_APP_ID": "a1"},
                    queue="root.etl", priority=9000)
    cmd = submit_argv("spark-submit", "k8s://http://api", launch, SETTINGS, "/state/agent.zip")
    assert cmd[:5] == ["spark-submit", "--master", "k8s://http://api", "--deploy-mode",
                       "cluster"]
    assert cmd[-4:] == [bootstrap_path(), "job.py", "--day", "1"]
    c = confs(cmd)
    assert c["spark.submit.pyFiles"] == "s3a://b/lib.zip,/state/agent.zip,/home/u/job.py"
    assert "--py-files" not in cmd  # the merged property replaces the option
    assert c["spark.kubernetes.namespace"] == "spark"  # ours: the namespace we watch
    assert c["spark.kubernetes.driver.label.sessionsched.io/app-id"] == "a1"
    assert c["spark.kubernetes.executor.label.sessionsched.io/queue"] == "root.etl"
    assert c["spark.kubernetes.driver.annotation.sessionsched.io/priority"] == "9000"
    assert c["spark.kubernetes.node.selector.pool"] == "spark"
    assert c["spark.kubernetes.driver.node.selector.pool"] == "drivers"
    assert c["spark.kubernetes.driverEnv.SESSIONSCHED_SERVER"] == "http://sched:6066"
    assert c["spark.dynamicAllocation.shuffleTracking.enabled"] == "true"
    assert c["spark.kubernetes.submission.waitAppCompletion"] == "false"
    assert c["spark.kubernetes.container.image"] == "spark:4.0.1"
    assert c["spark.kubernetes.authenticate.driver.serviceAccountName"] == "drv"


def test_user_choices_that_are_theirs_to_make_are_kept():
    launch = Launch(app_id="a2", name="a", argv=(
        "--conf", "spark.kubernetes.container.image=mine:1",
        "--conf", "spark.dynamicAllocation.enabled=false", "local:///opt/app/app.jar"))
    c = confs(submit_argv("s", "k8s://http://api", launch, SETTINGS, "/z.zip"))
    assert c["spark.kubernetes.container.image"] == "mine:1"
    assert "spark.dynamicAllocation.shuffleTracking.enabled" not in c
    assert "spark.submit.pyFiles" not in c  # a JVM app gets no agent


def test_rest_submission_becomes_class_conf_resource_args():
    request = {"action": "CreateSubmissionRequest", "appResource": "local:///opt/pi.jar",
               "mainClass": "org.example.Pi", "appArgs": ["10"],
               "sparkProperties": {"spark.master": "spark://sched:6066",
                                   "spark.executor.memory": "2g"},
               "environmentVariables": {"A": "b"}}
    launch = Launch(app_id="r1", name="pi", rest_request=request, in_cluster=True,
                    conf={"spark.app.name": "pi"})
    cmd = submit_argv("s", "k8s://http://api", launch, SETTINGS, "/z.zip")
    assert cmd[-2:] == ["local:///opt/pi.jar", "10"]
    assert cmd[cmd.index("--class") + 1] == "org.example.Pi"
    c = confs(cmd)
    assert c["spark.executor.memory"] == "2g" and "spark.master" not in c
    assert c["spark.kubernetes.driverEnv.A"] == "b"
    assert c["spark.kubernetes.driver.label.sessionsched.io/driver-in-cluster"] == "true"


def test_local_files_without_upload_path_are_refused_in_one_line():
    settings = SETTINGS.model_copy(update={"upload_path": None})
    launch = Launch(app_id="a3", name="a", argv=wrap_argv(["/home/u/job.py"]))
    with pytest.raises(ValueError, match=r"upload_path") as e:
        submit_argv("s", "k8s://http://api", launch, settings, "/z.zip")
    assert "\n" not in str(e.value)
    image_only = Launch(app_id="a4", name="a", argv=wrap_argv(["local:///opt/app/job.py"]))
    with pytest.raises(ValueError, match="sessionsched-agent|bootstrap|upload_path"):
        submit_argv("s", "k8s://http://api", image_only, settings, "/z/sessionsched-agent.zip")


def test_bootstrap_finds_the_shipped_script_on_the_drivers_path(tmp_path, monkeypatch):
    import sys

    from sessionsched.agent.bootstrap import find_script

    shipped = tmp_path / "spark-upload-1" / "job.py"
    shipped.parent.mkdir()
    shipped.write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "lib.zip"), str(shipped)])
    assert find_script("job.py") == str(shipped)
    assert find_script("other.py") == "other.py"  # not shipped: as given (runpy says why)
    (tmp_path / "job.py").write_text("")
    assert find_script("job.py") == "job.py"  # the working directory's first
