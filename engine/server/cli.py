"""``canopy-server``: the command line of the MySQL wire server."""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from typing import Optional

DESCRIPTION = """Serve Canopy over the MySQL wire protocol.

  canopy-server --port 3307 --user admin --password s3cret
  mysql -h 127.0.0.1 -P 3307 -u admin -ps3cret
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="canopy-server", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=3306, help="TCP port (default 3306; 0: any free port)")
    p.add_argument("--cluster", choices=("local", "ray"), default="local",
                   help="leaves in this process (local, default) or as Ray actors (ray)")
    p.add_argument("--address", help="Ray cluster address for --cluster ray (default: a private local Ray)")
    p.add_argument("--leaves", type=int, default=2, help="number of leaves (default 2)")
    p.add_argument("--partitions-per-leaf", type=int, default=4, help="partitions per leaf (default 4)")
    p.add_argument("--data-dir", help="keep tables, accounts and pipelines durably in this directory")
    p.add_argument("--load-dir", help="LOAD DATA INFILE reads only files inside this directory "
                                      "(without it, only LOAD DATA LOCAL INFILE)")
    p.add_argument("--memory-limit", help="what one query may hold in each process before it spills to "
                   "disk, e.g. 4GB (default: half the machine's memory; each session may SET memory_limit)")
    p.add_argument("--user", help="administrator to create (or whose password to set) at start; "
                                  "default root when CANOPY_ROOT_PASSWORD is set")
    p.add_argument("--password", help="the administrator's password (default: $CANOPY_ROOT_PASSWORD)")
    p.add_argument("--allow-anonymous", action="store_true",
                   help="let any user name in without a password, with full rights (trusted local use only)")
    p.add_argument("--ssl-cert", help="TLS certificate (PEM); with --ssl-key clients may connect with TLS")
    p.add_argument("--ssl-key", help="TLS private key (PEM)")
    p.add_argument("--database", default="canopy",
                   help="database created at start if missing (default canopy; '' for none)")
    p.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    return p


def main(argv: Optional[list[str]] = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("mysql_mimic").setLevel(logging.CRITICAL)   # its per-error tracebacks: we log ours
    password = args.password if args.password is not None else os.environ.get("CANOPY_ROOT_PASSWORD")
    user = args.user or ("root" if password is not None else None)
    if user is not None and password is None:
        print(f"canopy-server: --user {user} needs --password (or CANOPY_ROOT_PASSWORD)", file=sys.stderr)
        return 2
    if bool(args.ssl_cert) != bool(args.ssl_key):
        print("canopy-server: --ssl-cert and --ssl-key go together", file=sys.stderr)
        return 2

    from engine.errors import Error
    from engine.runner import start_runner
    from engine.server.server import CanopyServer, ServerStartError

    options = {}
    if args.data_dir:
        options["data_dir"] = args.data_dir
    if args.cluster == "ray" and args.address:
        options["address"] = args.address
    try:
        _check_port_free(args.host, args.port)
        runner = start_runner(args.cluster, leaves=args.leaves, partitions_per_leaf=args.partitions_per_leaf,
                              **options)
    except (Error, ValueError, ServerStartError) as error:
        print(f"canopy-server: {error}", file=sys.stderr)
        return 1
    try:
        if args.database and not runner.catalog.has_database(args.database):
            runner.catalog.create_database(args.database)
        from engine.pipelines import resume_pipelines
        resume_pipelines(runner)
        server = CanopyServer(runner, host=args.host, port=args.port, load_dir=args.load_dir,
                              admin=(user, password) if user else None, allow_anonymous=args.allow_anonymous,
                              tls=(args.ssl_cert, args.ssl_key) if args.ssl_cert else None,
                              memory_limit=args.memory_limit)
    except BaseException as error:
        runner.shutdown()
        if isinstance(error, (Error, ServerStartError)):
            print(f"canopy-server: {error}", file=sys.stderr)
            return 1
        raise
    try:
        asyncio.run(server.serve())
    except ServerStartError as error:
        print(f"canopy-server: {error}", file=sys.stderr)
        return 1
    return 0


def _check_port_free(host: str, port: int) -> None:
    """Fail before starting a cluster when the port is taken (the listener would fail after)."""
    import errno
    import socket

    from engine.server.server import ServerStartError
    if port == 0:
        return
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise ServerStartError(f"port {port} on {host} is already in use; stop what is listening "
                                       f"there or choose another with --port") from None
            raise ServerStartError(f"cannot listen on {host}:{port}: {error.strerror}") from None
