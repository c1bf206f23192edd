"""`swssd produce`: write changes through ProducerStateTable or ProducerTable.

Operations come from arguments (`set KEY f=v ...`, `del KEY`) or from a file:
- JSON Lines or a JSON array of {"op": "SET"|"DEL", "key": K, "fvs": {f: v} | [[f, v], ...]}
  ("table" in an object overrides --table);
- SONiC's swssconfig format: [{"TABLE:key": {f: v}, "OP": "SET"|"DEL"}, ...].
Consecutive SETs (and DELs) to one table are batched into one EVALSHA of up to --batch keys.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path

from ..channels.producer_state_table import ProducerStateTable
from ..channels.producer_table import ProducerTable
from ..errors import SwssdError
from ..fields import DEL_COMMAND, SET_COMMAND, FieldValues
from ..names import check_table_name
from ..redis.connector import DBConnector
from .connect import add_connection_arguments, connect_from_args


class OperationError(SwssdError, ValueError):
    """An operation the tool cannot understand; says where it came from."""


@dataclass(frozen=True)
class Operation:
    table: str
    op: str
    key: str
    fvs: FieldValues = field(default_factory=list)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    parser.add_argument("--table", metavar="TABLE",
                        help="table to write (needed unless every operation names its table)")
    parser.add_argument(
        "--kind", choices=["state", "queue"], default="state",
        help="state: ProducerStateTable; queue: ProducerTable",
    )
    parser.add_argument("--file", type=Path,
                        help="operations from a JSON, JSON Lines or swssconfig file ('-' for stdin)")
    parser.add_argument("--batch", type=_positive, default=128, metavar="N", help="keys per batched EVALSHA")
    parser.add_argument(
        "ops", nargs="*", metavar="OP",
        help="'set KEY field=value ...' or 'del KEY'; several operations may follow each other",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, not {text!r}")
    return value


def parse_words(words: list[str], table: str | None) -> list[Operation]:
    """`set K f=v f=v del K2 set K3 f=v` -> operations, in order."""
    ops: list[Operation] = []
    i = 0
    while i < len(words):
        verb = words[i].lower()
        if verb not in ("set", "del") or i + 1 >= len(words):
            raise OperationError(f"expected 'set KEY field=value ...' or 'del KEY' at {' '.join(words[i:i + 3])!r}")
        key = words[i + 1]
        i += 2
        fvs: FieldValues = []
        while verb == "set" and i < len(words) and words[i].lower() not in ("set", "del"):
            name, eq, value = words[i].partition("=")
            if not eq:
                raise OperationError(f"expected field=value, got {words[i]!r}")
            fvs.append((name, value))
            i += 1
        ops.append(Operation(_need_table(table, key), SET_COMMAND if verb == "set" else DEL_COMMAND, key, fvs))
    return ops


def parse_document(text: str, table: str | None, separator: str, source: str) -> list[Operation]:
    """JSON array, JSON Lines, or swssconfig: detected from the content."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise OperationError(f"{source}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
        return [_from_object(obj, table, separator, f"{source}: item {n}") for n, obj in enumerate(items, 1)]
    whole = _one_object(stripped)
    if whole is not None:  # one operation spread over several lines
        return [_from_object(whole, table, separator, source)]
    ops = []
    # JSON Lines ends lines at \n only: str.splitlines() would also cut at U+2028 or \x85,
    # which JSON strings may hold raw
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise OperationError(f"{source}:{lineno}: not valid JSON ({exc.msg})") from None
        ops.append(_from_object(obj, table, separator, f"{source}:{lineno}"))
    return ops


def _one_object(text: str) -> dict[str, object] | None:
    if not text.startswith("{") or "\n" not in text.strip():
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def _from_object(obj: object, table: str | None, separator: str, where: str) -> Operation:
    if not isinstance(obj, dict):
        raise OperationError(f"{where}: expected an object")
    op = str(obj.get("OP", obj.get("op", SET_COMMAND))).upper()
    if op not in (SET_COMMAND, DEL_COMMAND):
        raise OperationError(f"{where}: op must be SET or DEL, not {op!r}")
    if "key" in obj:
        fvs = _field_values(obj.get("fvs", {}), where)
        name = str(obj.get("table") or _need_table(table, obj["key"]))
        return Operation(check_table_name(name, where), op, str(obj["key"]), fvs)
    entries = [k for k in obj if k not in ("OP", "op")]
    if len(entries) != 1:
        raise OperationError(f"{where}: expected {{\"key\": ...}} or one \"TABLE{separator}key\" entry")
    full = entries[0]
    name, sep, key = full.partition(separator)
    if not sep:
        raise OperationError(f"{where}: {full!r} has no '{separator}' between table and key")
    return Operation(check_table_name(name, where), op, key, _field_values(obj[full], where))


def _field_values(raw: object, where: str) -> FieldValues:
    if isinstance(raw, dict):
        return [(str(f), str(v)) for f, v in raw.items()]
    if isinstance(raw, list) and all(isinstance(p, list) and len(p) == 2 for p in raw):
        return [(str(f), str(v)) for f, v in raw]
    raise OperationError(f"{where}: fields must be an object or a list of [field, value] pairs")


def _need_table(table: str | None, key: str) -> str:
    if not table:
        raise OperationError(f"no table for key {key!r}: pass --table")
    return table


def _runs(ops: list[Operation]) -> Iterator[tuple[tuple[str, str], list[Operation]]]:
    for group, run in groupby(ops, key=lambda o: (o.table, o.op)):
        yield group, list(run)


async def produce(db: DBConnector, ops: list[Operation], kind: str = "state", batch: int = 128) -> int:
    """Send `ops` in order; consecutive same-table SETs/DELs are batched. Returns how many were sent."""
    for (table, op), run in _runs(ops):
        if kind == "queue":
            producer = ProducerTable(db, table, buffered=True)
            for o in run:
                await (producer.set(o.key, o.fvs) if op == SET_COMMAND else producer.delete(o.key))
            await producer.flush()
            continue
        pst = ProducerStateTable(db, table)
        for start in range(0, len(run), batch):
            chunk = run[start:start + batch]
            if op == SET_COMMAND:
                await pst.set_many([(o.key, o.fvs) for o in chunk])
            else:
                await pst.delete_many([o.key for o in chunk])
    return len(ops)


async def run(args: argparse.Namespace) -> int:
    if not args.ops and not args.file:
        raise OperationError("nothing to produce: give 'set KEY f=v ...' / 'del KEY' or --file")
    # Argument and file mistakes are reported before Redis is needed.
    if args.table is not None:
        check_table_name(args.table, "--table")
    ops = parse_words(args.ops, args.table) if args.ops else []
    text = None
    if args.file:
        text = _read_stdin() if str(args.file) == "-" else _read(args.file)
    db = await connect_from_args(args)
    async with db:
        if text is not None:
            ops += parse_document(text, args.table, db.separator, str(args.file))
        sent = await produce(db, ops, args.kind, args.batch)
    where = f" in namespace {db.namespace}" if db.namespace else ""
    print(f"produced {sent} operation(s) to {db.name or db.db_id}{where}")
    return 0


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise OperationError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise OperationError(f"{path}: not UTF-8 text (byte {exc.start}); give a JSON or JSON Lines file") from None


def _read_stdin() -> str:
    try:
        return sys.stdin.read()
    except UnicodeDecodeError as exc:
        raise OperationError(f"stdin: not UTF-8 text (byte {exc.start})") from None
