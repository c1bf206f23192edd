"""How the tools reach a database: --url, else database_config.json (--db-config, $SWSSD_DB_CONFIG, SONiC
default), or with --namespace database_global.json (--db-global-config, $SWSSD_DB_GLOBAL_CONFIG, SONiC default).
--config takes the daemon's [redis] section instead: where Redis is, its user, password and TLS settings, so
the tools connect as the daemon does; the options above still say where, when given. Without --config the
password comes from the systemd credential redis-password or $SWSSD_REDIS_PASSWORD (or the URL)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import ConfigError, RedisUrlError, SwssdError
from ..orch.config import RedisConfig
from ..orch.config_file import load_config
from ..redis import redis_url
from ..redis.connector import DBConnector
from ..redis.credentials import PASSWORD_ENV
from ..redis.dbconfig import SonicDBGlobalConfig
from ..schema import DATABASES


class ConnectionOptionsError(SwssdError, ValueError):
    """Connection options that contradict each other (e.g. --namespace with --url)."""


def add_connection_arguments(parser: argparse.ArgumentParser, db_option: bool = True) -> None:
    """The options every tool reaches Redis with; `db_option=False` when the database is positional."""
    if db_option:
        parser.add_argument("--db", default="APPL_DB", help="database name from database_config.json")
    parser.add_argument(
        "--db-config",
        metavar="PATH",
        help="database_config.json (default $SWSSD_DB_CONFIG, else /var/run/redis/sonic-db/database_config.json)",
    )
    parser.add_argument(
        "--config", "-c", type=Path, metavar="FILE",
        help="the daemon's TOML config: its [redis] section (database_config or url, username, password_file, "
        "TLS files) is used, so the tools connect as the daemon does",
    )
    parser.add_argument(
        "--url",
        help="connect to this Redis URL instead (redis://host:port[/N], rediss://..., unix:///path[?db=N]); the "
        "database number and separator then come from --db-id/--separator, else the URL, else SONiC's usual "
        f"ones for --db. A password here shows in the process list: give it in ${PASSWORD_ENV} or a --config "
        "password_file instead",
    )
    parser.add_argument("--db-id", type=int, default=None, metavar="N", help="database number with --url")
    parser.add_argument("--separator", default=None, choices=[":", "|"], help="key separator with --url")
    parser.add_argument(
        "--namespace", "-n", metavar="NS",
        help="multi-ASIC: the network namespace (e.g. asic0) whose --db to use, as database_global.json "
        "places it (default: the host's)",
    )
    parser.add_argument(
        "--db-global-config",
        metavar="PATH",
        help="database_global.json for --namespace (default $SWSSD_DB_GLOBAL_CONFIG, else "
        "/var/run/redis/sonic-db/database_global.json)",
    )


def namespaced(args: argparse.Namespace) -> bool:
    """Whether the database is found through database_global.json rather than database_config.json."""
    return bool(args.namespace or args.db_global_config)


def url_defaults(args: argparse.Namespace, url: redis_url.RedisUrl) -> tuple[int | None, str]:
    """Database number and separator for a URL: given, else from the URL, else SONiC's for --db, else 0 and ':'."""
    usual_id, usual_sep = DATABASES.get(args.db, (0, ":"))
    db_id = args.db_id
    if db_id is None and url.db is None:
        db_id = usual_id
    return db_id, args.separator or usual_sep


def redis_settings(args: argparse.Namespace) -> RedisConfig:
    """The [redis] section of --config, else one with only the environment's password."""
    if args.config is not None:
        return load_config(args.config).redis
    redis = RedisConfig()
    redis.resolve(None)
    return redis


def _warn(args: argparse.Namespace, message: str) -> None:
    print(f"swssd {args.command}: warning: {message}", file=sys.stderr)


def _check_options(args: argparse.Namespace) -> None:
    if args.url and namespaced(args):
        raise ConnectionOptionsError(
            "--namespace and --db-global-config cannot be used with --url: the URL names one server already"
        )
    if args.db_config and namespaced(args):
        raise ConnectionOptionsError(
            "--db-config cannot be used with --namespace or --db-global-config: it is one namespace's "
            "database_config.json; give database_global.json with --db-global-config instead"
        )


async def connect_from_args(args: argparse.Namespace) -> DBConnector:
    """The connector the tool's options describe; contradicting options fail before a config file is read."""
    _check_options(args)
    redis = redis_settings(args)
    for line in redis.warnings(str(args.config) if args.config else None):
        _warn(args, line)
    options = redis.client_options()
    if namespaced(args):
        config = SonicDBGlobalConfig.load(args.db_global_config or redis.database_global_config)
        return await DBConnector.connect(args.db, config, namespace=args.namespace, **options)
    url = args.url or (redis.url if args.db_config is None else None)
    if url is None:
        return await DBConnector.connect(args.db, config=args.db_config or redis.database_config, **options)
    source = "--url" if args.url else str(args.config)
    try:
        parsed = redis_url.parse(url, tls=redis.tls)
    except RedisUrlError as exc:
        raise ConfigError(source, None if args.url else "redis.url", str(exc)) from None
    if args.url and parsed.password is not None:
        _warn(args, f"the password in --url shows in the process list; give it in ${PASSWORD_ENV} or a "
                    "--config password_file instead")
    if args.db not in DATABASES and args.db_id is None and parsed.db is None:
        # a misspelled name must not quietly become database 0
        raise ConnectionOptionsError(
            f"unknown database {args.db!r}: with {source} the database is one of SONiC's "
            f"({', '.join(DATABASES)}), or any name with its number given by --db-id N"
        )
    db_id, separator = url_defaults(args, parsed)
    return await DBConnector.from_url(url, db_id=db_id, separator=separator, name=args.db, **options)
