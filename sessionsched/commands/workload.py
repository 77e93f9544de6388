"""``sessionsched workload from-eventlogs PATH... -o FILE.yaml [--config SERVER_CONFIG]
[--cluster workers=N,cores=C,memory=M] [--queue-map RULE]... [--priority-map RULE]...
[--host-cpus N] [--calibrate]``

Builds a simulator workload (docs/operator/simulator.md) from Spark event logs
(``sessionsched.eventlog``): one app per log, plain or compressed as Spark writes them, single
files or rolling log directories. A log that cannot be read is named on stderr, one line, and
left out; the rest go on. Exit code 0 when a workload was written, 2 when none could be (no
log readable, a bad option).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..cli import UserError

RULE_HELP = ("KIND:PATTERN=VALUE, KIND user or name, PATTERN shell-style (etl-*); the first "
             "rule that matches wins; repeatable")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "workload",
        help="build simulator workloads (from Spark event logs)",
        description="Build a workload for `sessionsched simulate`.",
    )
    sub = p.add_subparsers(dest="workload_command", metavar="SUBCOMMAND", required=True)
    e = sub.add_parser(
        "from-eventlogs",
        help="a workload from Spark event logs, one app per log",
        description="A workload from Spark event logs (spark.eventLog.dir): one app per log, "
        "plain or compressed (lz4, lzf, snappy, zstd) as Spark writes them, single files or "
        "rolling log directories (eventlog_v2_<app id>). Each app's name, user, queue and "
        "priority (spark.sessionsched.queue, spark.ego.priority, else --queue-map / "
        "--priority-map, else the config's defaults), sizes, dynamic-allocation bounds, "
        "resource and gang properties, and its stages: task counts, task-time quantiles, the "
        "stages each waited for. Its submit time is its start relative to the first app's (a "
        "log holds no submission). A log that cannot be read is named on stderr and left out.",
    )
    e.add_argument("paths", nargs="+", metavar="PATH",
                   help="an event log file, a rolling log directory, or a directory of them")
    e.add_argument("-o", "--output", required=True, metavar="FILE.yaml",
                   help="where to write the workload ('-' for stdout)")
    e.add_argument("--config", metavar="SERVER_CONFIG",
                   help="a server config: its queues (with their admission) and defaults "
                   "(queue, priority); default: the queues the apps name, under root")
    e.add_argument("--cluster", metavar="workers=N,cores=C,memory=M",
                   help="the cluster's shape: N workers of C cores and M memory each (as "
                   "`sessionsched cluster up` takes them); default: inferred from the logs "
                   "(one worker per executor host, as large as the most it held at once), "
                   "and said so on stderr")
    e.add_argument("--queue-map", action="append", default=[], metavar="RULE",
                   help=f"the queue of an app that set no spark.sessionsched.queue: {RULE_HELP}"
                   " (user:alice=root.etl)")
    e.add_argument("--priority-map", action="append", default=[], metavar="RULE",
                   help=f"the priority of an app that set no spark.ego.priority: {RULE_HELP} "
                   "(name:nightly-*=2000)")
    e.add_argument("--driver-slots", type=int, metavar="N",
                   help="client-mode drivers the scheduler's host runs at once (default: the "
                   "config's cluster.driver_slots, else 8 or the most client-mode apps the logs "
                   "show at once if more)")
    e.add_argument("--host-cpus", type=float, metavar="N",
                   help="the CPUs of the one machine the logged drivers and executors started "
                   "on (a local cluster): the workload's cluster.host_cpus, so that starts "
                   "beside each other share them, and the fitted starts are the CPU time each "
                   "had (default: each start takes its time)")
    e.add_argument("--calibrate", action="store_true",
                   help="set cluster.executor_start_s to the value whose simulated apps end "
                   "closest to the logged ones (one simulation per value tried)")
    e.set_defaults(func=run_from_eventlogs)


def _source(args: argparse.Namespace):  # -> eventlog.build.Source
    from ..config import load_server_config, load_yaml
    from ..eventlog.app_entry import Defaults, parse_rule
    from ..eventlog.build import Source
    from ..eventlog.shape import parse_shape
    from ..model import parse_priority

    flag = "--queue-map"
    try:
        queue_rules = tuple(parse_rule(r) for r in args.queue_map)
        flag = "--priority-map"
        priority_rules = tuple(parse_rule(r) for r in args.priority_map)
        for rule in priority_rules:
            parse_priority(rule.value)
        flag = "--cluster"
        shape = None if args.cluster is None else parse_shape(args.cluster)
    except ValueError as err:
        raise UserError(f"{flag} {err}") from None
    if args.driver_slots is not None and args.driver_slots < 1:
        raise UserError(f"--driver-slots {args.driver_slots}: at least 1")
    cpus = args.host_cpus
    if cpus is not None and not 0 < cpus < float("inf"):
        raise UserError(f"--host-cpus {cpus:g}: a number of CPUs above 0")
    source = Source(shape=shape, queue_rules=queue_rules, priority_rules=priority_rules,
                    driver_slots=args.driver_slots, calibrate=args.calibrate, host_cpus=cpus)
    if args.config is None:
        return source
    config = load_server_config(args.config)  # ConfigError: one line, exit code 2
    return Source(shape=shape, queue_rules=queue_rules, priority_rules=priority_rules,
                  driver_slots=args.driver_slots or config.cluster.driver_slots,
                  queues=load_yaml(args.config).get("queues") or [
                      q.model_dump(mode="json", exclude_defaults=True) for q in config.queues],
                  config_name=str(args.config), cycle_s=config.server.cycle_ms / 1000.0,
                  calibrate=args.calibrate, host_cpus=cpus,
                  defaults=Defaults(queue=config.defaults.queue,
                                    priority=config.defaults.priority))


def run_from_eventlogs(args: argparse.Namespace) -> int:
    from ..eventlog.build import NoApps, build

    out = None if args.output == "-" else Path(args.output)
    if out is not None and (out.is_dir() or not out.parent.exists()):
        raise UserError(f"-o {out}: " + ("is a directory" if out.is_dir()
                                         else f"directory {out.parent} does not exist"))
    source = _source(args)
    try:
        built = build([Path(p) for p in args.paths], source)
    except NoApps as e:
        for line in e.skipped:
            print(line, file=sys.stderr)
        raise UserError(str(e)) from None
    for line in built.skipped:
        print(line, file=sys.stderr)
    for line in built.said:
        print(line, file=sys.stderr)
    if out is None:
        sys.stdout.write(built.text)
        return 0
    try:
        out.write_text(built.text)
    except OSError as e:
        raise UserError(f"-o {out}: cannot write: {e.strerror or e}") from None
    print(f"{out}: {built.apps} app(s)", file=sys.stderr)
    return 0
