"""`swssd watch --db CONFIG_DB --table PORT`: a table's changes, live, without consuming them.

Every table is followed through Redis keyspace events of its entry hashes (`TABLE<sep>*`) by a
SubscriberStateTable under one Select: the existing entries first (as SET), then a SET with the
entry's fields for each change and a DEL when it is deleted. Nothing is popped, so consumers are not
disturbed: on CONFIG_DB and STATE_DB that is every write; on APPL_DB's key-set tables it is what
the consumer applied (the `TABLE:key` hashes), while the key set and the staging hashes are left to
the consumer. Needs `notify-keyspace-events` (SONiC sets AKE); `--enable-keyspace-events` sets it.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from ..channels.selector import Select
from ..channels.subscriber_state_table import SubscriberStateTable
from ..fields import KeyOpFieldsValues
from ..names import check_table_name
from .connect import add_connection_arguments, connect_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    parser.add_argument("--table", action="append", required=True, metavar="TABLE",
                        help="table to watch (repeatable)")
    parser.add_argument("--json", action="store_true",
                        help='one JSON object a line: {"ts", "db", "table", "key", "op", "fvs": {field: value}}')
    parser.add_argument("--raw-fields", action="store_true",
                        help="keep field names as stored (else cut at their first '@', as C++ Table::get does)")
    parser.add_argument("--enable-keyspace-events", action="store_true",
                        help="turn keyspace notifications on in Redis when they are off (CONFIG SET)")
    parser.add_argument("--count", type=int, default=0, metavar="N",
                        help="stop after N changes, not counting the existing entries printed first (0: until Ctrl-C)")


def line(db: str, table: str, separator: str, task: KeyOpFieldsValues, as_json: bool) -> str:
    """One change as the user asked for it: JSON, or `time op TABLE<sep>key field=value ...`."""
    ts = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if as_json:
        return json.dumps({"ts": ts, "db": db, "table": table, "key": task.key, "op": task.op,
                           "fvs": dict(task.fvs)}, ensure_ascii=False)
    fields = "".join(f" {f}={v}" for f, v in task.fvs)
    return f"{ts} {task.op} {table}{separator}{task.key}{fields}"


async def run(args: argparse.Namespace) -> int:
    for table in args.table:
        check_table_name(table, "--table")
    db = await connect_from_args(args)
    name = db.name or str(db.db_id)
    seen = 0
    async with db, Select() as select:
        tables = [SubscriberStateTable(db, t, raw_fields=args.raw_fields,
                                       enable_keyspace_events=args.enable_keyspace_events) for t in args.table]
        for table in tables:
            await select.add(table)
        while True:
            ready = await select.select()
            if not isinstance(ready, SubscriberStateTable):
                continue
            tasks = await ready.pops()
            for i, task in enumerate(tasks):
                print(line(name, ready.name, db.separator, task, args.json), flush=True)
                seen += i >= ready.existing_popped  # the existing entries printed first are not changes
                if args.count and seen >= args.count:
                    return 0
