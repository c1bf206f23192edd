"""`swssd dump`: print tables as JSON, {"<table>": {"<key>": {"<field>": "<value>"}}}.

This is the format `swssd replay diff` compares against. State hashes (`_TABLE:key`) and the
channel bookkeeping keys (`*_KEY_SET`, `*_DEL_SET`, `*_KEY_VALUE_OP_QUEUE`) are not tables and
are left out.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..channels.table import TableDump
from ..names import check_table_name, shown
from ..redis.connector import DBConnector
from ..redis.scan import read_table
from ..schema import BOOKKEEPING_SUFFIXES, STATE_PREFIX
from .connect import add_connection_arguments, connect_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    parser.add_argument("--table", action="append", metavar="TABLE",
                        help="only this table (repeatable; default: every table)")
    parser.add_argument("--indent", type=int, default=2, metavar="N", help="JSON indentation, 0 for one line")


async def table_names(db: DBConnector) -> list[str]:
    """Every table that has at least one entry hash in the database."""
    names: set[str] = set()
    async for key in db.redis.scan_iter(count=1000, _type="hash"):
        if key.startswith(STATE_PREFIX) or key.endswith(BOOKKEEPING_SUFFIXES):
            continue
        names.add(key.split(db.separator, 1)[0])
    return sorted(names)


async def dump_tables(db: DBConnector, tables: list[str] | None = None) -> dict[str, TableDump]:
    """Contents of the given tables (all tables when None), keys sorted for stable output. Read
    with SCAN (never KEYS, which needs +keys and blocks Redis); a key under a table's prefix that
    is not a hash is left out and reported on stderr, one line per table."""
    out: dict[str, TableDump] = {}
    for name in tables or await table_names(db):
        found = await read_table(db, name)
        if found.not_hashes:
            print(f"swssd dump: table {shown(name)}: {len(found.not_hashes)} key(s) skipped, not hashes "
                  f"(first: {shown(found.not_hashes[0])})", file=sys.stderr)
        out[name] = {k: dict(sorted(found.entries[k])) for k in sorted(found.entries)}
    return out


async def run(args: argparse.Namespace) -> int:
    for name in args.table or []:
        check_table_name(name, "--table")
    db = await connect_from_args(args)
    async with db:
        result = await dump_tables(db, args.table)
    json.dump(result, sys.stdout, indent=args.indent or None, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0
