"""How the tools reach a database: --url, else database_config.json (--db-config, $SWSSD_DB_CONFIG, SONiC default)."""

from __future__ import annotations

import argparse

from ..connector import DBConnector


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", default="APPL_DB", help="database name from database_config.json (default APPL_DB)")
    parser.add_argument(
        "--db-config",
        metavar="PATH",
        help="database_config.json (default $SWSSD_DB_CONFIG, else /var/run/redis/sonic-db/database_config.json)",
    )
    parser.add_argument(
        "--url",
        help="connect to this Redis URL instead (redis://host:port, unix:///path); needs --db-id and --separator",
    )
    parser.add_argument("--db-id", type=int, default=None, help="database number with --url (default: from the URL, else 0)")
    parser.add_argument("--separator", default=":", choices=[":", "|"], help="key separator with --url (default ':')")


async def connect_from_args(args: argparse.Namespace) -> DBConnector:
    if args.url:
        return await DBConnector.from_url(args.url, db_id=args.db_id, separator=args.separator, name=args.db)
    return await DBConnector.connect(args.db, config=args.db_config)
