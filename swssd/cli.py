"""The `swssd` command: `swssd run` (the daemon), `swssd demo` (a first look on any machine), and the
operator tools `produce`, `dump`, `status` and `replay`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import uvloop
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from . import __version__
from .errors import (
    ConfigError,
    InvalidSeparatorError,
    InvalidTableNameError,
    RedisUnreachableError,
    SwssdError,
    UnknownDatabaseError,
    UnknownNamespaceError,
)
from .ops import logs as swssd_logging
from .ops.files import reason
from .orch.config import DEFAULT_CONFIG, Config
from .orch.config_file import load_config
from .orch.plugins import PluginError, use_config_dir
from .redis.connector import DBConnector
from .redis.embedded_redis import EmbeddedRedis
from .tools import check, db, dead_letters, dump, produce, status, watch
from .tools.connect import ConnectionOptionsError, namespaced

EXIT_CONFIG = 2
EXIT_PLUGIN = 3

_EPILOG = f"""exit status: 0 stopped cleanly, 1 failure or forced stop, {EXIT_CONFIG} invalid config,
{EXIT_PLUGIN} a plugin failed to load or start."""

_TOP_EPILOG = "exit status: each command's --help lists its own; 0 is success, 1 a failure, 2 bad arguments or config."

_TOOL_EPILOG = (
    f"exit status: 0 done; 1 Redis unreachable or a Redis error; {EXIT_CONFIG} bad arguments, input file "
    "or database config. Connection: --db names a database in database_config.json (--db-config, else "
    "$SWSSD_DB_CONFIG, else /var/run/redis/sonic-db/database_config.json); --url bypasses that file; "
    "--namespace NS (multi-ASIC) takes the database of namespace NS from database_global.json "
    "(--db-global-config, else $SWSSD_DB_GLOBAL_CONFIG, else /var/run/redis/sonic-db/database_global.json)."
)

_CONNECT_HINT = "give the file with --db-config PATH (or $SWSSD_DB_CONFIG), or connect with --url"
_GLOBAL_HINT = "give database_global.json with --db-global-config PATH (or $SWSSD_DB_GLOBAL_CONFIG)"


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Defaults shown in every help line, except where there is none to show (None, False, []) or
    the help text already says what the default is."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, []) or "default" in text:
            return action.help
        return super()._get_help_string(action)


def package_version() -> str:
    """The installed distribution's version (what pip shows), else the source tree's."""
    try:
        return version("swssd")
    except PackageNotFoundError:
        return __version__


def _fail(message: str, code: int, prog: str = "swssd") -> int:
    """One line on stderr, however the message was built (priority err when stderr is the journal)."""
    priority = "<3>" if swssd_logging.stderr_is_journal() else ""
    print(f"{priority}{prog}: error: {' '.join(message.splitlines())}", file=sys.stderr)
    return code


def _start_embedded(config: Config) -> EmbeddedRedis:
    """A private redis-server for a config that names none; its database_config.json is used."""
    server = EmbeddedRedis().start()
    config.redis.database_config = server.write_database_config()
    config.redis.password = None  # it has none; $SWSSD_REDIS_PASSWORD is for another Redis
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
    use_config_dir(config)
    try:
        swssd_logging.configure(config.logging.format, config.logging.level, config.logging.file)
    except OSError as exc:
        return _fail(str(ConfigError(config.path, "logging.file", f"cannot open the log file: {reason(exc)}")),
                     EXIT_CONFIG)
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


def cmd_check(args: argparse.Namespace) -> int:
    """Exit as `swssd run` would at start (2 config, 3 plugin), without consuming anything."""
    try:
        config = load_config(args.config)
        lines = check.check(config)
    except ConfigError as exc:
        return _fail(str(exc), EXIT_CONFIG, "swssd check")
    except PluginError as exc:
        return _fail(str(exc), EXIT_PLUGIN, "swssd check")
    for line in lines:
        print(line)
    print(f"{args.config}: OK")
    return 0


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
            f"STATE_DB and install routes once their ports are up. Runs for {args.seconds:g} seconds "
            "(--seconds N to change it; Ctrl-C stops sooner), then prints its totals.",
            file=sys.stderr,
        )
        database_config = server.write_database_config()
        code = uvloop.run(run_demo(database_config, args.seconds, args.capture, args.host))
        if code == 0 and args.dump is not None:
            uvloop.run(_dump_appl_db(database_config, args.dump))
        return code
    except (ConfigError, PluginError) as exc:
        return _fail(str(exc), 1)
    finally:
        server.stop()


async def _dump_appl_db(database_config: Path, path: Path) -> None:
    """The demo's APPL_DB as `swssd dump` prints it, to `path`: what `swssd replay diff` compares."""
    async with await DBConnector.connect("APPL_DB", database_config) as appl:
        tables = await dump.dump_tables(appl)
    path.write_text(json.dumps(tables, indent=2, ensure_ascii=False) + "\n")


ToolBody = Callable[[argparse.Namespace], Coroutine[Any, Any, int]]


def _run_tool(name: str, body: ToolBody, args: argparse.Namespace, *, until_interrupted: bool = False) -> int:
    """Run an async tool and turn each expected failure into one line and an exit status.
    `until_interrupted`: Ctrl-C is how the tool is meant to stop (exit 0, not 130)."""
    prog = f"swssd {name}"
    try:
        return int(uvloop.run(body(args)))
    except (produce.OperationError, ConnectionOptionsError, InvalidTableNameError) as exc:
        return _fail(str(exc), EXIT_CONFIG, prog)
    except UnknownDatabaseError as exc:
        where = "as the database" if name == "db" else "with --db"  # `swssd db` takes it positionally
        return _fail(f"{exc}; pass one of them {where}", EXIT_CONFIG, prog)
    except UnknownNamespaceError as exc:
        return _fail(f"{exc}; pass one of them with --namespace", EXIT_CONFIG, prog)
    except (ConfigError, InvalidSeparatorError) as exc:
        return _fail(f"{exc}; {_GLOBAL_HINT if namespaced(args) else _CONNECT_HINT}", EXIT_CONFIG, prog)
    except RedisUnreachableError as exc:
        return _fail(str(exc), 1, prog)
    except (RedisConnectionError, RedisTimeoutError) as exc:
        return _fail(f"lost the connection to Redis: {exc}; is redis-server still running?", 1, prog)
    except RedisError as exc:
        return _fail(f"Redis replied with an error: {str(exc) or type(exc).__name__}", 1, prog)
    except (SwssdError, OSError) as exc:
        return _fail(str(exc) or type(exc).__name__, 1, prog)
    except KeyboardInterrupt:
        return 0 if until_interrupted else _fail("interrupted", 130, prog)


def cmd_produce(args: argparse.Namespace) -> int:
    return _run_tool("produce", produce.run, args)


def cmd_dump(args: argparse.Namespace) -> int:
    try:
        return _run_tool("dump", dump.run, args)
    except BrokenPipeError:  # `swssd dump | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def cmd_db(args: argparse.Namespace) -> int:
    try:
        return _run_tool("db", db.run, args)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def cmd_watch(args: argparse.Namespace) -> int:
    swssd_logging.configure("console", "warning")  # the keyspace-events warning goes to stderr, not stdout
    try:
        return _run_tool("watch", watch.run, args, until_interrupted=True)
    except BrokenPipeError:  # `swssd watch ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def cmd_status(args: argparse.Namespace) -> int:
    return int(status.run(args))


def cmd_dead_letters(args: argparse.Namespace) -> int:
    prog = "swssd dead-letters"
    try:
        return int(uvloop.run(dead_letters.run(args)))
    except dead_letters.DeadLetterArgsError as exc:
        return _fail(str(exc), EXIT_CONFIG, prog)
    except ConfigError as exc:
        return _fail(str(exc), EXIT_CONFIG, prog)
    except BrokenPipeError:  # `swssd dead-letters list | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (RedisUnreachableError, RedisError, SwssdError, OSError) as exc:
        return _fail(str(exc) or type(exc).__name__, 1, prog)


def cmd_replay(argv: list[str]) -> int:
    from .replay.cli import main as replay_main

    return replay_main(argv)


def _command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    func: Callable[[argparse.Namespace], int],
    add_arguments: Callable[[argparse.ArgumentParser], None],
    *,
    help: str,
    description: str,
    epilog: str,
) -> None:
    """One sub-command: its parser shows defaults, and main() reports extra words with its usage."""
    parser = sub.add_parser(name, formatter_class=HelpFormatter, help=help, description=description, epilog=epilog)
    add_arguments(parser)
    parser.set_defaults(func=func, command_parser=parser)


def _run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", "-c", type=Path, metavar="FILE",
        help=f"TOML config (default: {DEFAULT_CONFIG} if present, else the example plugins)",
    )


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=10.0, metavar="N", help="stop after N seconds")
    parser.add_argument(
        "--capture", type=Path, metavar="DIR",
        help="also capture every popped task to DIR (swssd.capture.jsonl and swss.rec), "
             "as [capture] does: something for `swssd replay` to read",
    )
    parser.add_argument(
        "--host", metavar="NAME",
        help="the host the capture names (default: this machine's name): demos captured as different "
             "hosts replay as different switches",
    )
    parser.add_argument(
        "--dump", type=Path, metavar="FILE",
        help="at the end, write APPL_DB to FILE as `swssd dump` does (what `swssd replay diff --dump` reads)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="swssd",
        description="SONiC table channels for asyncio Python: the swssd daemon and its tools.",
        epilog=_TOP_EPILOG,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}",
                        help="print the version of the swssd package and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _command(
        sub, "run", cmd_run, _run_arguments,
        help="run the daemon with the Orch plugins of a config file",
        description="Consume the configured tables and feed the Orch plugins until SIGTERM/SIGINT. "
        "SIGHUP reopens log and capture files. With no Redis configured (and no SONiC "
        "database_config.json present) a private redis-server is started. The config file is code: "
        "its plugins are imported, with the config file's directory first on the import path.",
        epilog=_EPILOG,
    )
    _command(
        sub, "check", cmd_check, check.add_arguments,
        help="validate a config file and load its plugins, without consuming",
        description="What `swssd run --config FILE` would refuse at start, found without touching Redis: "
        "the config is validated, its databases looked up in database_config.json, and every plugin "
        "imported and created (start() is not run). Prints one line per plugin.",
        epilog=f"exit status: 0 the config is good, {EXIT_CONFIG} invalid config, {EXIT_PLUGIN} a plugin "
        "failed to import or be created.",
    )
    _command(
        sub, "demo", cmd_demo, _demo_arguments,
        help="start a private redis-server, the example plugins and a producer, and show changes flowing",
        description="A first look, no Redis needed: a private redis-server, the two example plugins "
        "(swssd/orch/examples) in a daemon, and a producer writing ports and routes to APPL_DB. "
        "Runs for --seconds (or until Ctrl-C), then prints the totals and what to try next.",
        epilog="exit status: 0 done, 1 the redis-server or the daemon could not start.",
    )
    _command(
        sub, "produce", cmd_produce, produce.add_arguments,
        help="write SET/DEL operations to a table, as a SONiC producer does",
        description="Write operations through ProducerStateTable (--kind state, what portsyncd and "
        "fpmsyncd use) or ProducerTable (--kind queue), batched. Operations come from the "
        "command line (set Ethernet0 speed=100000 mtu=9100 del Ethernet4) or from --file: a JSON array "
        'or JSON Lines of {"op": "SET", "key": K, "fvs": {field: value}} (an optional "table" '
        'overrides --table), or SONiC\'s swssconfig format [{"TABLE:key": {field: value}, "OP": "SET"}]. '
        "For a plain hash write (CONFIG_DB, STATE_DB) use `swssd db DB hset`.",
        epilog=_TOOL_EPILOG,
    )
    _command(
        sub, "dump", cmd_dump, dump.add_arguments,
        help="print tables as JSON (the format `swssd replay diff --dump` reads)",
        description='Print {"<table>": {"<key>": {"<field>": "<value>"}}} for every table of a database, '
        "or only the --table ones. Channel bookkeeping keys (*_KEY_SET, *_DEL_SET, ...) and state hashes "
        "(_TABLE:key) are left out.",
        epilog=_TOOL_EPILOG,
    )
    _command(
        sub, "db", cmd_db, db.add_arguments,
        help="run a Redis command on a database named as sonic-db-cli names it (hgetall, keys, hset, del, ...)",
        description="sonic-db-cli's shape: swssd db APPL_DB hgetall 'PORT_TABLE:Ethernet0', swssd db CONFIG_DB "
        "keys 'PORT|*', swssd db -n asic0 STATE_DB hset 'PORT_TABLE|Ethernet0' state ok, ... del KEY, hdel KEY "
        "FIELD. Any Redis command passes through; a hash prints as a Python dict and a list one item a line "
        "(as sonic-db-cli prints them), or JSON with --json. Options go before DB. Writes here are plain "
        "hash writes: key-set consumers (APPL_DB) never see them; use `swssd produce` for those.",
        epilog=_TOOL_EPILOG,
    )
    _command(
        sub, "watch", cmd_watch, watch.add_arguments,
        help="print a table's changes live, without consuming them",
        description="Follow --table through Redis keyspace events of its entry hashes (TABLE<sep>*), as a "
        "SubscriberStateTable does: existing entries first (SET), then one line per change, SET with the "
        "entry's fields or DEL. Nothing is popped: on APPL_DB key-set tables you see what the consumer "
        "applied, and the key set stays the consumer's. Needs notify-keyspace-events (SONiC sets AKE). "
        "Ctrl-C stops.",
        epilog=_TOOL_EPILOG,
    )
    _command(
        sub, "status", cmd_status, status.add_arguments,
        help="show a running daemon's figures; exit non-zero when it is unhealthy (a health check)",
        description="Read the daemon's metrics endpoint (config [metrics] enabled = true; its address "
        "comes from --config unless --metrics-url is given) and print, per table, "
        "popped/handled/retried/failed/dead-lettered/pending and the average handler time, then the "
        "loop lag and reconnects.",
        epilog="exit status: 0 healthy, 1 unhealthy (Redis down, loop stalled or lagging, a table stalled, not ready), "
        "2 endpoint unreachable or no endpoint in the config.",
    )
    _command(
        sub, "dead-letters", cmd_dead_letters, dead_letters.add_arguments,
        help="list, show, retry or purge the tasks a daemon gave up on (kept in Redis)",
        description="A daemon keeps every task it dead-lettered (failed max_attempts times, or set aside by "
        "the crash-loop guard) with the reason, in a capped Redis stream per database "
        "(_SWSSD_DEAD_LETTERS:<instance>). Give the daemon's --config. `retry` sends tasks back through "
        "the table's channel, so the running daemon handles them with the table's current rules.",
        epilog=f"exit status: 0 done; 1 Redis unreachable or a Redis error, or a dead letter not found or not "
        f"retried; {EXIT_CONFIG} invalid config or arguments.",
    )
    # Only for `swssd --help`: main() hands everything after `replay` to the replay command line.
    sub.add_parser(
        "replay", add_help=False,
        help="replay captures and swss.rec with PySpark: state, history, stats, diff, restore, "
        "compact (see `swssd replay --help`)",
    ).add_argument("args", nargs=argparse.REMAINDER)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command == "replay":  # its own parser, own help, own options
        return cmd_replay(argv[argv.index("replay") + 1:])
    if extra:  # reported with the sub-command's usage, which lists its options
        args.command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
