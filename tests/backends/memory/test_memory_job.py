"""What the memory cluster runs for a Launch (``backends/memory/job.py``): sizes read from the
Spark properties of every submission path, the work from ``spark.sessionsched.memory.*``,
and one-line refusals."""

import pytest

from sessionsched.agent.launch import wrap_argv
from sessionsched.backends.base import Launch
from sessionsched.backends.memory import Job, Stage, job_from_launch
from sessionsched.model import Resources

REST = {"action": "CreateSubmissionRequest", "appResource": "file:/a.jar", "mainClass": "Main",
        "sparkProperties": {"spark.driver.cores": "2", "spark.executor.memory": "2g"}}

JOBS = {
    # the server's Python launch: the agent's bootstrap wraps the user's file
    "wrapped python app, sizes from options and --conf": (
        Launch("a", "a", argv=wrap_argv(("--executor-cores", "2", "--conf",
                                         "spark.dynamicAllocation.maxExecutors=3", "job.py"))),
        Job("a", (Stage(2, 2.0),), executor=Resources(2, 1024), max_executors=3),
    ),
    "REST request in cluster mode; Launch.conf wins": (
        Launch("r", "r", rest_request=REST, in_cluster=True,
               conf={"spark.executor.memory": "512m"}),
        Job("r", (Stage(1, 2.0),), driver=Resources(2, 1024), in_cluster=True,
            executor=Resources(1, 512)),
    ),
    "work in seconds, startup, exit code": (
        Launch("w", "w", argv=("job.py",), conf={"spark.sessionsched.memory.work": "5s",
                                                   "spark.sessionsched.memory.startup": "3",
                                                   "spark.sessionsched.memory.exitCode": "7"}),
        Job("w", (Stage(1, 5.0),), startup_s=3.0, exit_code=7),
    ),
    "stages like sleep_tasks.py --stages": (
        Launch("s", "s", argv=("job.py",), conf={"spark.sessionsched.memory.work": "8x2,4x0.5"}),
        Job("s", (Stage(8, 2.0), Stage(4, 0.5))),
    ),
    "work 0: the driver works alone, no stage": (
        Launch("d", "d", argv=("job.py",), conf={"spark.sessionsched.memory.work": "0",
                                                   "spark.sessionsched.memory.startup": "30"}),
        Job("d", (), startup_s=30.0),
    ),
    "Spark's backlog timeouts: its requests ramp up": (
        Launch("b", "b", argv=("job.py",), conf={
            "spark.dynamicAllocation.schedulerBacklogTimeout": "500ms"}),
        Job("b", (Stage(1, 2.0),), backlog_s=(0.5, 0.5)),
    ),
    "static allocation: spark.executor.instances": (
        Launch("x", "x", argv=("--num-executors", "3", "--conf",
                               "spark.dynamicAllocation.enabled=false", "job.py")),
        Job("x", (Stage(1, 2.0),), min_executors=3, max_executors=3),
    ),
}


@pytest.mark.parametrize("launch,job", JOBS.values(), ids=JOBS.keys())
def test_job_from_launch(launch, job):
    assert job_from_launch(launch, default_work_s=2.0) == job


REFUSED = {
    "nothing to launch": (Launch("n", "n"), "nothing to launch"),
    "no main class": (Launch("m", "m", rest_request={**REST, "mainClass": ""}, in_cluster=True),
                      "Main class is missing."),
    "bad stages": (Launch("b", "b", argv=("job.py",),
                          conf={"spark.sessionsched.memory.work": "8x0"}),
                   "spark.sessionsched.memory.work='8x0': expected seconds, or stages"),
    "bad exit code": (Launch("e", "e", argv=("job.py",),
                             conf={"spark.sessionsched.memory.exitCode": "oops"}),
                      "spark.sessionsched.memory.exitCode='oops': expected a whole number"),
    "bad backlog timeout": (Launch("t", "t", argv=("job.py",), conf={
        "spark.dynamicAllocation.sustainedSchedulerBacklogTimeout": "-1s"}),
        "spark.dynamicAllocation.sustainedSchedulerBacklogTimeout='-1s'"),
    "bad executor memory": (Launch("e", "e", argv=("--executor-memory", "lots", "job.py")),
                            "spark.executor.memory='lots' (from --executor-memory)"),
}


@pytest.mark.parametrize("launch,message", REFUSED.values(), ids=REFUSED.keys())
def test_a_launch_that_could_never_run_is_refused_in_one_line(launch, message):
    with pytest.raises(ValueError) as refused:
        job_from_launch(launch, default_work_s=2.0)
    assert message in str(refused.value) and "\n" not in str(refused.value)
