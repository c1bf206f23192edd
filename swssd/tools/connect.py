"""How the tools reach a database: --url, else database_config.json (--db-config, $SWSSD_DB_CONFIG, SONiC
default), or with --namespace database_global.json (--db-global-config, $SWSSD_DB_GLOBAL_CONFIG, SONiC default)."""

from __future__ import annotations

import argparse
from urllib.parse import urlsplit

from ..connector import DBConnector
from ..dbconfig import SonicDBGlobalConfig
from ..errors import ConfigError, SwssdError
from ..orch.config import SONIC_DATABASES


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
        "--url",
        help="connect to this Redis URL instead (redis://host:port[/N], unix:///path[?db=N]); the database "
        "number and separator then come from --db-id/--separator, else the URL, else SONiC's usual ones for --db",
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


def url_defaults(args: argparse.Namespace) -> tuple[int | None, str]:
    """Database number and separator for --url: given, else from the URL, else SONiC's for --db, else 0 and ':'."""
    usual_id, usual_sep = SONIC_DATABASES.get(args.db, (0, ":"))
    db_id = args.db_id
    if db_id is None and not _url_names_db(args.url):
        db_id = usual_id
    return db_id, args.separator or usual_sep


def _url_names_db(url: str) -> bool:
    parts = urlsplit(url)
    return "db=" in parts.query or (parts.scheme != "unix" and parts.path.strip("/") != "")


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
    if namespaced(args):
        config = SonicDBGlobalConfig.load(args.db_global_config)
        return await DBConnector.connect(args.db, config, namespace=args.namespace)
    if args.url:
        db_id, separator = url_defaults(args)
        try:
            return await DBConnector.from_url(args.url, db_id=db_id, separator=separator, name=args.db)
        except SwssdError:
            raise
        except ValueError as exc:  # redis-py's word for a URL it cannot parse
            raise ConfigError("--url", None, f"{exc}") from None
    return await DBConnector.connect(args.db, config=args.db_config)
