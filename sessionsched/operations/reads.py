"""What every identified caller may read, from the service's published view (the store for
what memory has forgotten): the base of the operations port (``port.Operations``), which adds
the operations that need a right. ``AppRead`` is the app as every door shows it.
"""

from __future__ import annotations

from pathlib import Path

from sessionsched.config import resolve_queue
from sessionsched.model import AppState
from sessionsched.model.executor_notes import (
    ExecutorNote,
    NoteCode,
    executor_notes,
    executor_wait,
)
from sessionsched.operations.outcomes import Kind, Outcome, done, failed, service_refusal
from sessionsched.service.metrics import CONTENT_TYPE
from sessionsched.service.reads import AppRead
from sessionsched.service.resource_view import (
    app_held,
    cluster_resources,
    executor_figures,
    executor_waits,
    queue_resources,
    seen_workers,
)
from sessionsched.service.service import Service

__all__ = ["AppRead", "Reads"]


class Reads:
    def __init__(self, service: Service):
        self.service = service

    @property
    def max_upload_bytes(self) -> int:
        return self.service.config.uploads.max_file_bytes

    def app(self, app_id: str) -> AppRead | None:
        return self.service.app(app_id)

    def leaf(self, queue: str) -> Outcome:
        """Done: the name of the leaf queue ``queue`` names (by full or short name)."""
        try:
            return done(resolve_queue(self.service.view.engine.root, queue).name)
        except LookupError as e:
            return failed(Kind.INVALID, str(e))

    def connect_place(self, queue: str | None) -> Outcome:
        """Done: (the leaf queue a Spark Connect session asking for ``queue`` goes to -- the
        server's ``defaults.queue`` when None --, that queue's ``connect_share_level``)."""
        config = self.service.config
        out = self.leaf(queue or config.defaults.queue)
        return done((out.value, config.connect_share_level(out.value))) if out.ok else out

    def apps(self, leaf: str | None = None, state: AppState | None = None) -> list[AppRead]:
        """The apps in memory (of one leaf queue, in one state)."""
        return self.service.view.apps(leaf, state)

    def resolve(self, any_id: str) -> tuple[str, bool] | None:
        """(our app id, given as a Spark application id?) for a driver or Spark app id."""
        return self.service.resolve(any_id)

    def events(self, app_id: str) -> Outcome:
        try:
            return done(self.service.events(app_id))
        except Exception as e:
            return service_refusal(e)

    def driver_log(self, app_id: str, lines: int) -> Outcome:
        """The last lines of a driver's log, for a door that has checked who may read it
        (Livy's batch object carries its recent log)."""
        try:
            return done(self.service.log_tail(app_id, lines))
        except Exception as e:
            return service_refusal(e)

    def queue_rows(self) -> list:
        return self.service.view.queue_rows()

    def queue_resources(self) -> dict | None:
        """Per queue, each custom resource's use, cap and guarantee (``resource_view``); None
        for a cluster without custom resources."""
        return queue_resources(self.service.view)

    def app_resources(self, app_id: str) -> dict | None:
        """An app's custom resources: per executor, its driver's and held now (name ->
        amount); None when it asks for none (or is not in memory)."""
        view = self.service.view
        sub = view.submissions.get(app_id)
        if sub is None or not (sub.spec.executor.custom or sub.spec.driver.custom):
            return None
        return {"executor": dict(sub.spec.executor.custom), "driver": dict(sub.spec.driver.custom),
                "held": app_held(sub.spec, view.engine.apps.get(app_id))}

    def executor_notes(self, app: AppRead) -> list[ExecutorNote]:
        """Why an admitted app holds fewer executors than it wants (``executor_notes``); none
        for an app that is not running."""
        view = self.service.view
        facts = view.engine.apps.get(app.id)
        if not app.state.admitted or facts is None:
            return []
        return executor_notes(executor_figures(view, facts),
                              seen_workers(view, self.service.watch.workers))

    def executor_wait(self, app: AppRead) -> tuple[NoteCode, str | None] | None:
        """``executor_waits``' code for one app (None for an app that is not running)."""
        view = self.service.view
        facts = view.engine.apps.get(app.id)
        if not app.state.admitted or facts is None:
            return None
        return executor_wait(executor_figures(view, facts),
                             seen_workers(view, self.service.watch.workers))

    def executor_waits(self) -> dict[str, tuple[NoteCode, str | None]]:
        """Each running app's one code of why it holds fewer executors than it wants, and the
        resource that is short (``executor_wait``), by app id: the lists' and ``/metrics``'."""
        return executor_waits(self.service.view, self.service.watch.workers)

    def queue_wait_codes(self) -> dict[str, str]:
        """Each waiting leaf queue's reason code (``queue_rows``' reason), by name."""
        return self.service.view.queue_wait_codes()

    def health_row(self) -> dict:
        """The view's health, the store's (a round trip to the database) and the role; behind
        several clusters, each one (whether its backend answers, what it offers)."""
        service = self.service
        row = service.view.health_row()
        store = service.store.health()
        row["store"] = str(store)
        if not store.ok:
            row["status"] = "degraded"
        row["role"], row["leader"] = service.role, service.leader_url
        if service.role in ("standby", "taking over"):  # alive; its books are the leader's
            row["status"] = "standby"
        if service.view.engine.cluster_rows:  # several clusters: each one's reachability
            row["clusters"] = [{"name": c.name, "reachable": c.reachable,
                                "cores": c.capacity.cores, "memory_mib": c.capacity.mem_mib}
                               for c in service.view.engine.cluster_rows]
        return row

    def cluster_row(self) -> dict:
        """The cluster as the engine last saw it: what it offers the scheduler's apps, each
        worker the backend names with what was free at its last report (none when it names
        none, or is out of reach), the scheduler's host as room for drivers, and the master's
        web UI when the backend is a standalone master named in the config."""
        view, cluster = self.service.view, self.service.config.cluster_registry()[0]
        # The watch's last report, not the engine's workers: those keep the free room of the
        # report that last changed the workers' sizes.
        workers = self.service.watch.workers
        backends = getattr(self.service.backend, "backends", {})  # several: each cluster's
        return {
            "reachable": view.health.reachable, "cluster": view.health.describe(),
            "cores": view.engine.capacity.cores, "memory_mib": view.engine.capacity.mem_mib,
            "workers": [{"name": w.name, "cores": w.size.cores, "memory_mib": w.size.mem_mib,
                         "free_cores": w.free.cores, "free_memory_mib": w.free.mem_mib,
                         **({"resources": dict(w.size.custom),
                             "free_resources": dict(w.free.custom)} if w.size.custom else {})}
                        for w in workers],
            "driver_host": view.host_row(),
            "spark_ui": cluster.master_ui if cluster.backend == "standalone" else None,
            "resources": cluster_resources(view, workers),
            # Behind several clusters, each one (``engine.clusters.view.ClusterRow``).
            **({"clusters": [
                {"name": c.name, "reachable": c.reachable, "cores": c.capacity.cores,
                 "memory_mib": c.capacity.mem_mib, "driver_slots": c.driver_slots,
                 "running": c.apps, "queued": c.queued,
                 "master": getattr(backends.get(c.name), "master", "") or None}
                for c in view.engine.cluster_rows]}
               if view.engine.cluster_rows else {}),
        }

    def cluster_health(self) -> str:
        return self.service.view.health.describe()

    def metrics(self) -> tuple[bytes, str]:
        """(the Prometheus text, its content type)."""
        return self.service.metrics.render(), CONTENT_TYPE

    def add_metrics(self, collector) -> None:
        """A door's own gauges (a prometheus ``Collector``) in ``/metrics``, beside the
        service's (the Connect door's sessions)."""
        self.service.metrics.registry.register(collector)

    @property
    def version(self) -> int:
        """Bumped with every published view: answers cached under an older one are stale."""
        return self.service.version

    def placement(self, app_id: str):
        """Where the cluster placed a driver (``backends.base.Placement``), or None."""
        return self.service.backend.placement(app_id)

    # --- what a door that starts drivers itself needs (Livy's sessions) ---------------------

    @property
    def url(self) -> str:
        return self.service.url

    @property
    def master(self) -> str:
        return self.service.config.cluster_registry()[0].master  # several: the first's

    @property
    def workdir(self) -> str:
        """The state directory: drivers run there."""
        return str(self.service.log_dir.parent)

    def secret_for(self, app_id: str) -> str | None:
        """The app's agent secret (auth mode tokens), for a driver started by a door."""
        return self.service.secret_for(app_id)

    @property
    def ca(self) -> str | None:
        """``server.tls.ca``: what a driver started by a door verifies the server with."""
        tls = self.service.config.server.tls
        return str(Path(tls.ca).resolve()) if tls is not None and tls.ca else None
