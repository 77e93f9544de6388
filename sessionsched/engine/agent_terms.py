"""The engine's terms with an app's driver and its agent, decided here and nowhere else: what
a driver is launched with, and what an app is taken to want when no agent speaks for it.
The launcher, the backends and the agent carry these out; none of them decides them again.

Launch terms (``launch_terms``, handed out on ``LaunchDriver.terms``):

1. **Dynamic allocation on or off** (``dynamic_allocation``): on unless the user turned it off
   (``spark.dynamicAllocation.enabled=false``): the driver agent can then steer the app's
   executors, and Spark standalone would otherwise hand a static app every free core at
   registration. A Spark REST submission (a JVM app: no agent can steer it) keeps what it
   asked for: off unless it turned allocation on itself. Decided when the submission is
   checked (``intake``), because a static app is sized otherwise (its cap is
   ``spark.executor.instances``, else ``spark.cores.max`` / executor cores), and kept on the
   app's spec (``AppSpec.dynamic_allocation``): the launch hands it on.
2. **The executor ceiling handed to the agent** (``executor_ceiling``): the cluster's cores
   over the app's executor cores at launch, None when not a single executor fits. The
   launcher sets it as ``spark.dynamicAllocation.maxExecutors`` where the user set none: the
   agent never raises its cap above the value it finds at attach time, so this is the most the
   app can ever get, and an app whose agent never attached still cannot ask for more than the
   cluster holds.

3. **A gang's N** (``AppSpec.gang``, docs/design/gangs.md): its executors are launched as N at
   once - ``spark.dynamicAllocation.minExecutors`` and ``initialExecutors`` N, so Spark asks
   for them all at its start and never releases below them (the engine's floor is N too);
   a gang that fell back (``soft`` timeout) is launched as an ordinary app.

``launch_decision`` is the ``LaunchDriver`` the engine gives out (``Scheduler._admit``), with
both terms; a launch tried again after a transient failure is decided again by it, on the
capacity of that moment (``service.carrying``), as its first try was.

What an app is taken to want (``demand_after_report``, the silent-agent rule):

4. An app's demand (``AppRecord.demand``: executors it could use now) is what its driver agent
   last said (``DemandChanged``) while the agent speaks for it. An app that no live agent
   speaks for -- none (a JVM app, a static app), not yet (a driver still starting), or one
   gone silent (not heard from within three heartbeats) -- is taken to want what the cluster
   says it holds: so the engine does not try to take back what nobody could give up (a driver
   without an agent cannot release an executor on order), and a silent agent's last demand is
   no claim (a dead agent's app whose job ended would otherwise keep a claim on executors it no
   longer uses, and could be granted more). An ``admission-only`` agent reports demand but no
   executors: the cluster's view counts for those, its demand stands.

   Who reported an executor list is a fact of the ``ExecutorsChanged`` event (``Witness``): the
   agent's own list (or a backend's that reports as one, the memory cluster) says nothing about
   demand; the cluster's list beside an agent that speaks for the app leaves the demand alone;
   the cluster's list with no agent speaking (``Witness.CLUSTER_ALONE``, as the service's
   ``reconcile`` finds it) sets the demand to the executors listed. The engine applies this as
   it takes the list (``lifecycle.executors_changed``).
"""

from __future__ import annotations

from ..model import AppSpec, Resources
from .events import LaunchDriver, LaunchTerms, Witness


def dynamic_allocation(asked: bool | None, via_spark_rest: bool) -> bool:
    """On or off: what the user asked (``spark.dynamicAllocation.enabled``, None: unset), else
    on -- but off for a Spark REST submission that did not ask (module doc, 1)."""
    if asked is not None:
        return asked
    return not via_spark_rest


def executor_ceiling(capacity: Resources, executor: Resources) -> int | None:
    """The most executors of this size the cluster's cores hold; None if not one (module doc,
    2: no ceiling is handed then)."""
    return capacity.cores // max(executor.cores, 1) or None


def launch_terms(spec: AppSpec, capacity: Resources) -> LaunchTerms:
    """The terms for this app, with the cluster's ``capacity`` now (module doc, 1-3)."""
    gang = spec.gang
    return LaunchTerms(dynamic_allocation=spec.dynamic_allocation,
                       executor_ceiling=executor_ceiling(capacity, spec.executor),
                       gang_executors=None if gang is None else gang.executors)


def launch_decision(spec: AppSpec, capacity: Resources) -> LaunchDriver:
    """Launch the app's driver, on these terms (module doc)."""
    return LaunchDriver(spec.app_id, launch_terms(spec, capacity))


def demand_after_report(seen_by: Witness, listed: int, demand: int) -> int:
    """The app's demand once an executor list of ``listed`` executors, reported by
    ``seen_by``, is on the books (``demand``: what it was)."""
    return listed if seen_by is Witness.CLUSTER_ALONE else demand
