"""The `swssd` command: `swssd run` (the daemon) and `swssd demo` (a first look on any machine)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import uvloop

from . import logging as swssd_logging
from .embedded_redis import EmbeddedRedis
from .errors import ConfigError, SwssdError
from .orch.config import DEFAULT_CONFIG, Config, load_config
from .orch.plugins import PluginError

EXIT_CONFIG = 2
EXIT_PLUGIN = 3

_EPILOG = f"""exit status: 0 stopped cleanly, 1 failure or forced stop, {EXIT_CONFIG} invalid config,
{EXIT_PLUGIN} a plugin failed to load or start."""


def _fail(message: str, code: int) -> int:
    print(f"swssd: error: {message}", file=sys.stderr)
    return code


def _start_embedded(config: Config) -> EmbeddedRedis:
    """A private redis-server for a config that names none; its database_config.json is used."""
    server = EmbeddedRedis().start()
    config.redis.database_config = server.write_database_config()
    print(
        f"swssd: no Redis configured: started a private redis-server on {server.url} "
        f"(unix socket {server.unix_socket}); it is removed on exit",
        file=sys.stderr,
    )
    return server


def cmd_run(args: argparse.Namespace) -> int:
    from .orch.daemon import Daemon
    from .orch.examples.demo import example_config

    path = args.config or (DEFAULT_CONFIG if os.path.exists(DEFAULT_CONFIG) else None)
    try:
        config = load_config(path) if path else example_config(None)
    except ConfigError as exc:
        return _fail(str(exc), EXIT_CONFIG)
    swssd_logging.configure(config.logging.format, config.logging.level, config.logging.file)
    server = None
    try:
        if not config.redis_configured:
            server = _start_embedded(config)
        return uvloop.run(Daemon(config).run())
    except ConfigError as exc:
        return _fail(str(exc), EXIT_CONFIG)
    except PluginError as exc:
        return _fail(str(exc), EXIT_PLUGIN)
    except SwssdError as exc:
        return _fail(str(exc), 1)
    finally:
        if server is not None:
            server.stop()


def cmd_demo(args: argparse.Namespace) -> int:
    from .orch.examples.demo import run_demo

    swssd_logging.configure("console", "info")
    try:
        server = EmbeddedRedis().start()
    except SwssdError as exc:
        return _fail(str(exc), 1)
    try:
        print(
            f"swssd demo: private redis-server on {server.url}; example plugins mirror PORT_TABLE into "
            f"STATE_DB and install routes once their ports are up. Ctrl-C stops.",
            file=sys.stderr,
        )
        return uvloop.run(run_demo(server.write_database_config(), args.seconds))
    except (ConfigError, PluginError) as exc:
        return _fail(str(exc), 1)
    finally:
        server.stop()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="swssd",
        description="SONiC table channels for asyncio Python: the swssd daemon and its tools.",
        epilog=_EPILOG,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser(
        "run",
        help="run the daemon with the Orch plugins of a config file",
        description="Consume the configured tables and feed the Orch plugins until SIGTERM/SIGINT. "
        "SIGHUP reopens log and capture files. With no Redis configured (and no SONiC "
        "database_config.json present) a private redis-server is started.",
        epilog=_EPILOG,
    )
    run.add_argument(
        "--config", "-c", type=Path, metavar="FILE",
        help=f"TOML config (default: {DEFAULT_CONFIG} if present, else the example plugins)",
    )
    run.set_defaults(func=cmd_run)

    demo = sub.add_parser(
        "demo",
        help="start a private redis-server, the example plugins and a producer, and show changes flowing",
        description="A first look: no Redis needed. Runs for --seconds or until Ctrl-C.",
    )
    demo.add_argument("--seconds", type=float, default=10.0, metavar="N", help="stop after N seconds (default 10)")
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
