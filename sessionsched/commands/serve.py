"""``sessionsched serve [--config F] [--host H] [--port P]``: run the scheduler service.

Listens on 127.0.0.1:6066 by default — the Spark REST port, so ``spark-submit --master
spark://127.0.0.1:6066 --deploy-mode cluster --conf spark.master.rest.enabled=true`` submits
to the scheduler. ``--host``/``--port`` override the config's ``server`` section. With auth
mode ``none`` a non-loopback host is refused. ``server.tls: {cert, key}`` serves HTTPS.
Stops cleanly on SIGTERM or Ctrl-C; drivers keep running and are adopted at the next start.
``--standby`` (``server.standby: true``): on a PostgreSQL store another scheduler leads, wait
as its standby and take over when it goes (``server/leader.py``;
docs/operator/two-schedulers.md).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from ..cli import UserError
from ..config import STANDBY_NEEDS_POSTGRESQL, load_server_config
from ..config.sections import checked_host

# How long a thread holding the interpreter lock keeps it while another waits. A cycle's
# CPU-bound step holds it; each of a read's hand-overs (socket, handler, answer) may wait this
# long, 5 ms by default: 1 ms keeps reads short while cycles run
# (docs/design/bounded-cycles.md).
SWITCH_INTERVAL_S = 0.001
# uvicorn.run's exit code when the server could not start (a port in use, say)
STARTUP_FAILURE = 3

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the scheduler (Spark REST protocol, native API, agent API, /metrics)",
        description="Run the scheduler service: driver queues and executor arbitration in "
        "front of a Spark cluster.",
    )
    p.add_argument("--config", metavar="F", help="server YAML (default: built-in defaults)")
    p.add_argument("--host", metavar="H", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", metavar="P", type=int, help="port to listen on (default 6066)")
    p.add_argument(
        "--standby", action="store_true",
        help="on a PostgreSQL store led by another scheduler, wait as its standby (redirecting "
        "clients to it) and take over when it goes (server.standby: true); without it, "
        "starting beside a leader is refused",
    )
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="default: info",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from ..backends.base import BackendError
    from ..runtime.gc_pacer import GcPacer
    from ..server.app import UnsafeListen, asgi, check_listen, create_app
    from ..server.http_server import HttpServer
    from ..store import StoreUnavailable

    config = load_server_config(args.config)
    server = config.server.model_copy(
        update={k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    )
    if args.standby:
        if not config.on_postgresql():
            raise UserError(f"--standby: {STANDBY_NEEDS_POSTGRESQL.split(': ', 1)[1]}")
        server = server.model_copy(update={"standby": True})
    if not 1 <= server.port <= 65535:
        raise UserError(f"--port {server.port}: expected 1..65535")
    try:
        checked_host(server.host)
    except ValueError as e:
        raise UserError(f"--host {e}") from None
    config = config.model_copy(update={"server": server})
    try:
        check_listen(server.host, config.auth.mode)
    except UnsafeListen as e:
        raise UserError(str(e)) from None

    logging.basicConfig(level=args.log_level.upper(), format=LOG_FORMAT)
    # APScheduler logs every run (INFO) and every skipped overlapping run (WARNING).
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    # httpx logs every request at INFO: the masters' pages, read each cycle, would bury the
    # scheduler's own lines. Kept at --log-level debug, where they help.
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        logging.getLogger("httpx").setLevel(logging.WARNING)
    for warning in config.warnings():  # asked of the backend, not honoured: said, not refused
        logging.getLogger("sessionsched").warning("%s", warning)
    host = f"[{server.host}]" if ":" in server.host else server.host
    tls = server.tls
    if tls is not None:
        _check_tls(tls)
    scheme = "https" if tls is not None else "http"
    try:
        app = create_app(config, url=server.advertise_url or f"{scheme}://{host}:{server.port}")
    except (BackendError, LookupError, ValueError, StoreUnavailable) as e:
        raise UserError(f"cannot start: {e}") from None
    except OSError as e:  # the state directory's files: server.state_dir is a file, say
        raise UserError(f"cannot start: {e.filename or ''}: {e.strerror or e}") from None
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    # Full GC passes over the books would otherwise cost a cycle (and every read) ~0.25 s
    # at 20,000 apps (``runtime.gc_pacer``).
    http = HttpServer(uvicorn.Config(
        asgi(app),
        host=server.host,
        port=server.port,
        log_level=args.log_level,
        access_log=False,
        lifespan="on",
        ssl_certfile=tls.cert if tls is not None else None,
        ssl_keyfile=tls.key if tls is not None else None,
    ), on_stop=app.state.service.desk.close)
    with GcPacer():
        http.run()
    return 0 if http.started else STARTUP_FAILURE


def _check_tls(tls) -> None:
    """The certificate and its key loaded as uvicorn will load them, now: a directory or a
    file that is no PEM would otherwise fail in uvicorn, as a traceback, after the store
    and the backend were opened."""
    import ssl

    for what, path in (("cert", tls.cert), ("key", tls.key), ("ca", tls.ca)):
        if path is None:
            continue
        if not os.path.isfile(path) or not os.access(path, os.R_OK):
            raise UserError(f"server.tls.{what}: cannot read {path}"
                            + (" (a directory)" if os.path.isdir(path) else ""))
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(tls.cert, tls.key)
    except (ssl.SSLError, ValueError) as e:
        raise UserError(f"server.tls: {tls.cert} and {tls.key} are not a PEM certificate and "
                        f"its private key ({getattr(e, 'reason', None) or e})") from None
