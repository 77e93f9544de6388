"""Event logs -> a simulator workload (the YAML ``sessionsched simulate`` runs as is).

Every log found (``files.find_logs``) is read and parsed on its own; one that cannot be read
(cut short, foreign, an unknown codec, still being written) is named in ``Built.skipped`` and
left out, never fatal to the rest. The apps are ordered by their start; each becomes an entry
(``app_entry``). The queues are a server config's (``Source.queues``), else a tree of the
queues the apps name (each a leaf under ``root``, with the defaults; ``default`` too when an
app names none). An app whose queue the tree lacks goes to the default queue, with a note. The
cluster is the one given, else inferred (``shape``), cycling as the config's scheduler does
(``server.cycle_ms``), with the latencies the logs show (``fitted``). The workload is then
checked as ``sessionsched simulate`` checks it; an app the check refuses (one that could never
start on the given cluster) is left out with a line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

import yaml

from ..config import ConfigError, QueueConfig, build_queue_tree, parse_model, resolve_queue
from ..model import parse_mem_mib
from ..sim.workload import WorkloadConfig
from .app_entry import Defaults, Entry, Rule, app_entry, stamped_submit_ms, submit_ms
from .calibrate import calibrated_executor_start
from .codecs import UnreadableLog
from .events import AppFacts, parse_app
from .files import LogSource, find_logs, read_lines
from .fitted import fitted_cluster
from .render import render
from .shape import Shape, describe, infer_shape, mem_text, need_of

DEFAULT_DRIVER_SLOTS = 8  # the simulator's default
MIN_RUN_S = 86400.0


@dataclass(frozen=True)
class Source:
    """What the workload takes besides the logs (the command's options)."""

    shape: Shape | None = None  # None: inferred from the logs
    queues: list[dict] | None = None  # a server config's ``queues``, as written
    config_name: str = ""
    defaults: Defaults = Defaults()
    queue_rules: tuple[Rule, ...] = ()
    priority_rules: tuple[Rule, ...] = ()
    driver_slots: int | None = None
    cycle_s: float | None = None  # the config's scheduler cycle (``server.cycle_ms``)
    calibrate: bool = False  # executor_start_s by simulation (``calibrate``)
    host_cpus: float | None = None  # the one machine's CPUs the logged starts shared (``fitted``)


@dataclass(frozen=True)
class Built:
    text: str  # the workload's YAML
    apps: int
    skipped: tuple[str, ...]  # one line per log left out: "PATH: skipped: why"
    said: tuple[str, ...] = field(default=())  # what the user should know (inferred cluster)


class NoApps(ValueError):
    """No log could be read: there is no workload. ``skipped``: why each log was left out,
    as ``Built.skipped`` says it (without them the user would learn only that none was read)."""

    def __init__(self, message: str, skipped: list[str]):
        super().__init__(message)
        self.skipped = tuple(skipped)


def read_apps(paths: list[Path]) -> tuple[list[tuple[LogSource, AppFacts]], list[str]]:
    sources, skipped = find_logs(paths)
    apps = []
    for source in sources:
        try:
            apps.append((source, parse_app(read_lines(source))))
        except UnreadableLog as e:
            skipped.append(f"{source.path}: skipped: {e}")
        except OSError as e:
            skipped.append(f"{source.path}: skipped: {e.strerror or e}")
    return apps, skipped


def _unique_names(apps: list[AppFacts]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for facts in apps:
        base = facts.name.strip() or facts.app_id or "app"
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return out


def queues_named(entries: list[Entry]) -> list[dict]:
    """A tree of the queues the apps name (module doc), in the server config's schema. A name
    that is no queue path (``root.``, ``a..b``) adds ``default`` instead: its app goes there,
    with a note (``_place_queues``), and the tree stays one the workload's check takes."""
    tree: dict = {}
    for e in entries:
        q = e.app.get("queue")
        parts = (q or "default").removeprefix("root.").split(".")
        if not all(_is_queue_name(p) for p in parts):
            parts = ["default"]
        node = tree
        for part in parts:
            node = node.setdefault(part, {})

    def configs(node: dict) -> list[dict]:
        return [{"name": k, **({"queues": configs(v)} if v else {})} for k, v in node.items()]

    return [{"name": "root", "queues": configs(tree)}]


def _is_queue_name(name: str) -> bool:
    try:
        QueueConfig(name=name)
    except ValueError:  # pydantic's ValidationError is one
        return False
    return True


def _place_queues(entries: list[Entry], queues: list[dict], default: str | None) -> list[Entry]:
    root = build_queue_tree([parse_model(QueueConfig, q, "queues") for q in queues])
    out = []
    for e in entries:
        q = e.app.get("queue")
        if q is None:
            out.append(e)
            continue
        try:
            leaf = resolve_queue(root, q)
        except LookupError as err:
            app = {k: v for k, v in e.app.items() if k != "queue"}
            if default is not None:
                app["queue"] = default
            out.append(Entry(app, (*e.notes, f"queue {q!r} left out ({err}): the default")))
            continue
        out.append(replace(e, app={**e.app, "queue": leaf.name}))
    return out


def _peak_client_drivers(apps: list[AppFacts], entries: list[Entry]) -> int:
    moves = []
    for facts, e in zip(apps, entries, strict=True):
        if not e.app["driver"]["in_cluster"]:
            moves += [(facts.start_ms, 1), (facts.end_ms, -1)]
    held = peak = 0
    for _, step in sorted(moves):
        held += step
        peak = max(peak, held)
    return peak


def build(paths: list[Path], source: Source | None = None) -> Built:
    """The workload of the logs ``paths`` name (module doc); NoApps if none could be read."""
    source = source or Source()
    read, skipped = read_apps(paths)
    if not read:
        raise NoApps("no event log could be read" + (f" ({len(skipped)} skipped)"
                                                     if skipped else ""), skipped)
    read.sort(key=lambda pair: (submit_ms(pair[1]), pair[1].start_ms))
    apps = [facts for _, facts in read]
    t0 = submit_ms(apps[0])
    # what the run's 0 stands for: a server config's plans fire from it (``simulate --config``)
    start = datetime.fromtimestamp(t0 / 1000.0, timezone.utc).isoformat(timespec="milliseconds")
    entries = [app_entry(facts, (submit_ms(facts) - t0) / 1000.0, name, source.queue_rules,
                         source.priority_rules, source.defaults)
               for facts, name in zip(apps, _unique_names(apps), strict=True)]
    queues = source.queues if source.queues is not None else queues_named(entries)
    entries = _place_queues(entries, queues, source.defaults.queue)
    said = []
    shape = source.shape
    if shape is None:
        mibs = [parse_mem_mib(e.app["executor"]["memory"]) for e in entries]
        shape = infer_shape(apps, mibs, [need_of(e.app) for e in entries])
        said.append(f"cluster inferred from the logs: {describe(shape)} (one worker per "
                    "executor host, each as large as the most held on one host at once); "
                    "give --cluster to set it")
    span_s = (max(f.end_ms for f in apps) - t0) / 1000.0
    cluster = {"cores": shape.cores * shape.workers,
               "memory": mem_text(shape.mem_mib * shape.workers),
               "workers": shape.workers,
               "driver_slots": source.driver_slots or max(DEFAULT_DRIVER_SLOTS,
                                                          _peak_client_drivers(apps, entries)),
               "max_time_s": float(max(MIN_RUN_S, math.ceil(2 * span_s)))}
    if source.cycle_s is not None:
        cluster["cycle_s"] = source.cycle_s
    fitted, how = fitted_cluster(apps, source.host_cpus)
    cluster.update(fitted)
    if source.host_cpus is not None:
        cluster["host_cpus"] = source.host_cpus
    stamped = sum(1 for f in apps if stamped_submit_ms(f) is not None)
    header = ["A workload from Spark event logs, by `sessionsched workload from-eventlogs`.",
              *(["Each app's submit is its submission as sessionsched stamped it, relative to "
                 "the first app's."] if stamped == len(apps) else
                ["Each app's submit is its start relative to the first app's: a log holds no "
                 "submission,", "so an app that waited in a queue shows its start instead"
                 + (" (but for the apps sessionsched stamped its submission into)."
                    if stamped else ".")]),
              *(["Fitted from the logs:", *(f"  {line}" for line in how)] if how else []),
              (f"Queues, defaults and admission: {source.config_name}." if source.config_name
               else "Queues: the ones the apps name, with the defaults."),
              (f"Cluster: inferred from the logs, {describe(shape)} (a lower bound)."
               if said else f"Cluster: given, {describe(shape)}.")]
    entries, dropped = _checked(header, cluster, queues, entries, start)
    skipped += dropped
    if not entries:
        raise NoApps("no app of the logs could run on the cluster", skipped)
    text = render(header, cluster, queues, entries, start)
    if source.calibrate:
        completions = {name: (f.end_ms - submit_ms(f)) / 1000.0
                       for f, name in zip(apps, _unique_names(apps), strict=True)}
        cluster["executor_start_s"], line = calibrated_executor_start(text, completions)
        fits = [i for i, h in enumerate(header) if h.startswith("  executor_start_s")]
        header.insert(fits[0] + 1 if fits else len(header), f"  {line}")
        text = render(header, cluster, queues, entries, start)
    return Built(text, len(entries), tuple(skipped), tuple(said))


def _checked(header: list[str], cluster: dict, queues: list, entries: list[Entry],
             start: str) -> tuple[list[Entry], list[str]]:
    """The entries the simulator's own check accepts, and a line for each it refuses."""
    dropped: list[str] = []
    while entries:
        data = yaml.safe_load(render(header, cluster, queues, entries, start))
        try:
            parse_model(WorkloadConfig, data, "the workload")
            break
        except ConfigError as e:
            index, why = _app_problem(str(e))
            if index is None or index >= len(entries):
                raise
            dropped.append(f"{entries[index].notes[0].split(' ')[0]}: left out: {why}")
            entries = entries[:index] + entries[index + 1:]
    return entries, dropped


def _app_problem(problem: str) -> tuple[int | None, str]:
    """Which app a workload check's problem names (``apps[3].queue: ...``), and the rest."""
    marker = "apps["
    at = problem.find(marker)
    if at < 0:
        return None, problem
    digits, _, rest = problem[at + len(marker):].partition("]")
    return (int(digits) if digits.isdigit() else None), rest.lstrip(".: ")
