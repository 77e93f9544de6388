"""``sessionsched demo --clusters 2``: the demo's burst on two clusters, a and b, behind one
scheduler and one queue tree (docs/operator/clusters.md).

The scheduler's config names both (``clusters:``) with ``placement: spill``: each cycle a is
offered the queued apps first and b takes what a cannot hold now. Each cluster has one driver
slot, so at most two apps run at once, as in the one-cluster demo (the machine carries no more
than ``make demo`` asks of it), the queues still wait, and the second app to start spills to b.
With ``--backend memory`` both are memory clusters; otherwise two ``LocalCluster``s from
pyspark's Spark, each in a directory of its own under the demo's and on free ports of its own,
started in turn and each stopped by the PIDs it recorded however the demo ends (the caller
holds the list, filled before each start).

The verdict at the end checks what several clusters promise: each app that started was placed
exactly once (its event trail's ``placed`` lines), on the cluster its JSON names; on real
clusters each app's Spark application is on that cluster's master and no other's; and both
clusters ran apps.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from ..backends.base import BackendError
from ..cli import UserError
from ..client import App, SchedulerClient

NAMES = ("a", "b")
SLOTS_EACH = 1
PORT_TRIES = 3
WORKER = {"workers": 1, "cores": 2, "memory": "2g"}  # each cluster as the one-cluster demo's
_PLACED = re.compile(r"placed on cluster (\S+)")


def memory_entries() -> list[dict]:
    return [{"name": n, "backend": "memory", **WORKER, "driver_slots": SLOTS_EACH}
            for n in NAMES]


def local_entries(clusters: Iterable) -> list[dict]:
    """``clusters:`` entries reading each LocalCluster's record from its directory."""
    return [{"name": n, "backend": "local", "dir": str(c.directory), "driver_slots": SLOTS_EACH}
            for n, c in zip(NAMES, clusters, strict=True)]


def with_clusters(config: dict, entries: list[dict]) -> dict:
    """The one-cluster demo's config with ``clusters:`` (and spill) in place of ``cluster:``."""
    rest = {k: v for k, v in config.items() if k != "cluster"}
    return {**rest, "clusters": entries, "placement": "spill"}


def start_clusters(workdir: Path, into: list, say: Callable[[str], None]) -> None:
    """Start a LocalCluster for each name, in turn, putting each in ``into`` before it
    starts: the caller's cleanup stops every one that may run, whatever interrupts this.

    Each takes free ports, but a port found free may be taken before its process binds it
    (the REST port, the master's + 1, is not even looked for): twice as many ports as one
    cluster's are in play, so a start that lost a port is tried again on others."""
    from ..backends.local import ClusterError, LocalCluster

    for name in NAMES:
        for attempt in range(1, PORT_TRIES + 1):
            cluster = LocalCluster(workdir / f"cluster-{name}", **WORKER)
            if attempt == 1:
                into.append(cluster)
            else:
                into[-1] = cluster  # the try before stopped whatever it had started
            try:
                cluster.start()
                break
            except ClusterError as e:
                if "already in use" not in str(e) or attempt == PORT_TRIES:
                    raise UserError(f"cluster {name} did not start: {e}") from None
        say(f"cluster {name}: {cluster.master_url} (UI {cluster.master_ui})")


def setup(backend: str, config: dict, workdir: Path, into: list,
          say: Callable[[str], None]) -> tuple[dict, str]:
    """The clusters started (``local``; each appended to ``into``) or described (``memory``),
    the one-cluster ``config`` made to serve them, and the driver slots in words."""
    if backend == "memory":
        for name in NAMES:
            say(f"cluster {name}: in memory (no Spark): 1 worker, 2 cores, 2g")
        entries = memory_entries()
    else:
        start_clusters(workdir, into, say)
        entries = local_entries(into)
    slots = (f"{SLOTS_EACH} driver slot on each of clusters {', '.join(NAMES)} "
             f"(placement spill: {NAMES[0]} first)")
    return with_clusters(config, entries), slots


# --- the verdict -----------------------------------------------------------------------------


def placements(client: SchedulerClient, ids: Iterable[str]) -> dict[str, list[str]]:
    """Each app's placements, in order: the clusters its event trail's ``placed`` lines name."""
    out: dict[str, list[str]] = {}
    for app_id in ids:
        events = client.events(app_id)
        out[app_id] = [m.group(1) for e in events if e.get("kind") == "placed"
                       if (m := _PLACED.match(e.get("detail") or ""))]
    return out


def master_apps(clusters: Iterable) -> dict[str, set[str]]:
    """Each real cluster's Spark application ids, running or completed, as its master lists
    them; a master that does not answer lists none."""
    from ..backends.master import MasterClient

    out: dict[str, set[str]] = {}
    for name, cluster in zip(NAMES, clusters, strict=True):
        client = MasterClient(cluster.master_ui, timeout_s=3.0)
        try:
            view = client.read_master()
            out[name] = {a.id for a in (*view.active_apps, *view.completed_apps)}
        except BackendError:
            out[name] = set()
        finally:
            client.close()
    return out


def cluster_verdict(apps: list[App], placed: Mapping[str, list[str]],
                    masters: Mapping[str, set[str]] | None = None) -> tuple[bool, str]:
    """(held, one line): each started app placed once, on the cluster it names (and, given
    the masters' lists, on that master only), and every cluster ran an app."""
    problems: list[str] = []
    ran: dict[str, list[str]] = {n: [] for n in NAMES}
    started = checked = 0
    for a in apps:
        where, p = a.raw.get("cluster"), list(placed.get(a.id, ()))
        if a.started_at is None and not p:
            continue  # never left its queue
        started += 1
        if p != [where]:
            problems.append(f"{a.name} on {where or 'no cluster'} was placed "
                            f"{len(p)} times ({', '.join(p) or 'never'})")
        elif masters is not None and a.spark_app_id:
            checked += 1
            on = sorted(n for n, listed in masters.items() if a.spark_app_id in listed)
            if on != [where]:
                problems.append(f"{a.name}'s application {a.spark_app_id} is on the masters "
                                f"of {', '.join(on) or 'no cluster'}, not {where} alone")
        if where in ran:
            ran[where].append(a.name)
    idle = [n for n, names in ran.items() if not names]
    if idle:
        problems.append(f"cluster {', '.join(idle)} ran no app")
    if problems:
        return False, "two clusters: NOT as expected: " + "; ".join(problems)
    agree = ""
    if masters is not None:  # an app that ended before its SparkContext has no application
        agree = (", on its master alone" if checked == started
                 else f", {checked} of {started} seen on its master alone")
    each = ", ".join(f"{n} ran {len(names)} ({', '.join(names)})" for n, names in ran.items())
    return True, (f"each app ran on exactly one cluster (placed once, where it says{agree}): "
                  f"{each}; both clusters were used.")
