"""`swssd db DB COMMAND [ARG ...]`: a Redis command on a SONiC database named as sonic-db-cli names it.

`swssd db APPL_DB hgetall 'PORT_TABLE:Ethernet0'` prints `{'admin_status': 'up', ...}` and `keys`
one key a line, as sonic-db-cli does, so what operators type on a switch works here; `--json`
prints the reply as JSON for scripts. Any command passes through (hget, hset, del, hdel, scan, ...);
the database is found as the other tools find it (database_config.json, --namespace, --url).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .connect import add_connection_arguments, connect_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser, db_option=False)
    parser.add_argument("--json", action="store_true", help="print the reply as JSON instead of sonic-db-cli's form")
    parser.add_argument("db", metavar="DB", help="database name, as in database_config.json (APPL_DB, CONFIG_DB, ...)")
    parser.add_argument("command", metavar="COMMAND", help="Redis command: hgetall, hget, hset, hdel, keys, del, ...")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARG", help="the command's arguments")


def render(reply: Any) -> str | None:
    """sonic-db-cli's output: a list one item a line, a hash as a Python dict, nothing for nil."""
    if reply is None:
        return None
    if isinstance(reply, (list, set, tuple)):
        return "\n".join(str(item) for item in reply)
    return str(reply)


async def run(args: argparse.Namespace) -> int:
    db = await connect_from_args(args)
    async with db:
        command = args.command.upper()
        words = args.args or (["*"] if command == "KEYS" else [])
        reply = await db.redis.execute_command(command, *words)
    if args.json:
        json.dump(reply if not isinstance(reply, set) else sorted(reply), sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        text = render(reply)
        if text:
            print(text)
    return 0
