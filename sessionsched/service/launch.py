"""From a stored submission to the ``Launch`` a backend starts: the one place that decides what
a driver is started with.

The driver agent's bootstrap plugs in here: ``build_launch`` is the hook that may wrap a Python
app's ``argv`` and add the agent's settings (it is called for every launch, after a restart
too, so what it adds never has to be stored).

It carries out the engine's launch terms (``LaunchDriver.terms``, ``engine.agent_terms``):
whether the app runs with dynamic allocation and the executor ceiling are decided there, not
here.

What the service adds to the user's properties (``Launch.conf`` wins over the user's):

- ``spark.app.name``: the name the app is shown under;
- submit and connect kinds, when the terms say dynamic allocation is on:
  ``spark.dynamicAllocation.enabled=true`` and ``spark.dynamicAllocation.shuffleTracking.enabled
  =true`` (standalone has no external shuffle service by default; shuffle tracking keeps
  executors holding shuffle data until it is no longer needed);
- ``spark.executor.cores`` when unset: Spark standalone's default is "every free core of the
  worker", which would make the scheduler's executor count meaningless;
- ``spark.cores.max`` when unset (``cores_max``): ``spark.ego.slots.max``, so the cluster
  enforces the cap even for an app without an agent (JVM apps get this static cap only); for a
  static app also its executor cap times its executor cores, or a gang's N where it has no
  cap: Spark standalone hands a static app every free core at registration, bounded by
  ``spark.cores.max`` alone (``spark.executor.instances`` is YARN's and Kubernetes' only), so
  a static gang of 4 would otherwise take 6 cores of a free 6 - more than its reservation;
- a gang's N (the terms' ``gang_executors``, docs/design/gangs.md), with dynamic allocation on:
  ``spark.dynamicAllocation.minExecutors`` and ``initialExecutors`` N, over the user's: Spark
  asks for all N at its start, into the room reserved for them, and never releases below N.

The driver agent (``agent/launch.py``), submit kind: a Python app runs through the agent's
bootstrap (``wrap_argv``); with dynamic allocation on, ``agent_conf`` adds decommission when
the queue reclaims gracefully (``reclaim_timeout`` > 0) and ``maxExecutors`` at the terms'
executor ceiling, each only where the user did not set it.

What a Spark event log cannot know, stamped into every launch's properties (``stamps``) so
that the log of an app sessionsched ran carries it (``workload from-eventlogs`` reads them:
docs/operator/simulator.md): ``spark.sessionsched.submitTime`` and
``spark.sessionsched.launchTime`` (epoch milliseconds: its submission, and its driver's launch
here) and ``spark.sessionsched.queue`` (the leaf it ran in). Behind several clusters, also
``spark.sessionsched.attempt``: how many times the app was placed (docs/operator/clusters.md),
so that a driver of an older attempt (a launch that started something after all, on a cluster
the app has left) can be told apart; one cluster's launches carry no attempt.

The environment gets ``SESSIONSCHED_APP_ID``, ``SESSIONSCHED_SERVER`` and, when the server has
one for the app, ``SESSIONSCHED_TOKEN`` (docs/design/agent-protocol.md); ``SESSIONSCHED_CA`` when
``server.tls.ca`` is set (the agent verifies the server with it); ``SESSIONSCHED_ATTEMPT`` with
the attempt (the agent reports it).
"""

from __future__ import annotations

import time
from pathlib import Path

from sessionsched.agent.launch import agent_conf, wrap_argv
from sessionsched.backends.base import Launch
from sessionsched.engine.events import LaunchTerms
from sessionsched.model.submission import AppKind, Submission
from sessionsched.spark.submit_args import SparkArgsError, effective_properties, parse_spark_submit


def user_conf(app: Submission) -> dict[str, str]:
    """The user's own properties: the request's ``conf`` (spark-defaults' part), then what
    ``argv`` sets (``--conf``, dedicated options), which wins -- as ``intake.new_apps`` reads
    them. ``--conf spark.dynamicAllocation.enabled=false`` on the command line must keep
    an app static."""
    props = dict(app.conf)
    if app.argv:
        try:
            args = parse_spark_submit(list(app.argv))
            props.update({k: p.value for k, p in
                          effective_properties(args, {}, app.cwd or ".").items()})
        except (SparkArgsError, OSError):
            pass  # checked at submission; a file gone since then changes nothing here
    return props


def unsized_terms(app: Submission) -> LaunchTerms:
    """The terms of a launch decided without the cluster's capacity (no ceiling): the app's
    own dynamic allocation (``AppSpec.dynamic_allocation``)."""
    return LaunchTerms(dynamic_allocation=app.spec.dynamic_allocation)


def cores_max(app: Submission, terms: LaunchTerms) -> int | None:
    """The ``spark.cores.max`` the launch sets where the user set none (module doc): the
    smallest of ``spark.ego.slots.max`` and, for a static app, its executor cap (or a gang's
    N) in cores; None when nothing caps it."""
    spec = app.spec
    caps = [] if spec.slots_max is None else [spec.slots_max]
    if not terms.dynamic_allocation:
        n = spec.max_executors if spec.max_executors is not None else terms.gang_executors
        if n is not None:
            caps.append(n * spec.executor.cores)
    return min(caps) if caps else None


def service_conf(app: Submission, terms: LaunchTerms | None = None) -> dict[str, str]:
    """The properties the service adds for this app launched on ``terms`` (see the module
    doc; default ``unsized_terms``)."""
    terms = terms or unsized_terms(app)
    user = user_conf(app)
    out: dict[str, str] = {"spark.app.name": app.name}
    if app.kind in (AppKind.SUBMIT, AppKind.CONNECT) and terms.dynamic_allocation:
        out["spark.dynamicAllocation.enabled"] = "true"
        if "spark.dynamicAllocation.shuffleTracking.enabled" not in user:
            out["spark.dynamicAllocation.shuffleTracking.enabled"] = "true"
    if "spark.executor.cores" not in user:
        out["spark.executor.cores"] = str(app.spec.executor.cores)
    cap = cores_max(app, terms)
    if cap is not None and "spark.cores.max" not in user:
        out["spark.cores.max"] = str(cap)
    if terms.gang_executors is not None and terms.dynamic_allocation:
        n = str(terms.gang_executors)
        out["spark.dynamicAllocation.minExecutors"] = out[
            "spark.dynamicAllocation.initialExecutors"] = n
    return out


SUBMIT_TIME = "spark.sessionsched.submitTime"
LAUNCH_TIME = "spark.sessionsched.launchTime"
QUEUE = "spark.sessionsched.queue"
ATTEMPT = "spark.sessionsched.attempt"
ENV_ATTEMPT = "SESSIONSCHED_ATTEMPT"


def stamps(app: Submission, now: float, attempt: int | None = None) -> dict[str, str]:
    """The properties a launch at ``now`` (epoch seconds) of ``attempt`` stamps (module doc)."""
    out = {SUBMIT_TIME: str(round(app.submitted_at * 1000)), LAUNCH_TIME: str(round(now * 1000)),
           QUEUE: app.queue}
    if attempt is not None:
        out[ATTEMPT] = str(attempt)
    return out


def build_launch(
    app: Submission, server_url: str, log_dir: str | Path, token: str | None = None,
    reclaim_timeout_s: float = 0.0, terms: LaunchTerms | None = None, ca: str | None = None,
    node_sort: str = "fair", attempt: int | None = None,
) -> Launch:
    """The Launch for an app of kind ``submit``, ``connect`` or ``rest`` (sessions are not
    launched: the notebook starts its own driver once admitted), on the engine's ``terms``
    (default ``unsized_terms``), placed by its queue's ``node_sort`` (``Launch.node_sort``);
    ``attempt``: its placement behind several clusters (module doc)."""
    terms = terms or unsized_terms(app)
    if app.kind == AppKind.SESSION:
        raise ValueError(f"{app.id} is a notebook session: its notebook starts the driver")
    env = {"SESSIONSCHED_APP_ID": app.id, "SESSIONSCHED_SERVER": server_url}
    if token and app.kind != AppKind.REST:  # a JVM driver has no agent to give it to
        env["SESSIONSCHED_TOKEN"] = token
    if ca and app.kind != AppKind.REST:
        env["SESSIONSCHED_CA"] = ca
    if attempt is not None:
        env[ENV_ATTEMPT] = str(attempt)
    ours = {**service_conf(app, terms), **stamps(app, time.time(), attempt)}
    if app.kind == AppKind.REST:
        return Launch(
            app_id=app.id,
            name=app.name,
            rest_request=app.rest_request,
            conf=ours,
            env=env,
            in_cluster=True,
            queue=app.queue,
            priority=app.spec.priority,
            node_sort=node_sort,
        )
    conf = {k: v for k, v in app.conf.items() if k != "spark.master"}
    conf.update(ours)
    # Static apps run through the bootstrap too: their agent reports admission-only.
    argv = wrap_argv(app.argv)
    if terms.dynamic_allocation:
        conf.update(agent_conf(user_conf(app), reclaim_timeout_s, terms.executor_ceiling)[0])
    return Launch(
        app_id=app.id,
        name=app.name,
        argv=argv,
        conf=conf,
        env={**app.env, **env},
        cwd=app.cwd,
        in_cluster=app.spec.driver_in_cluster,
        log_path=str(Path(log_dir) / f"{app.id}.log"),
        queue=app.queue,
        priority=app.spec.priority,
        node_sort=node_sort,
    )
