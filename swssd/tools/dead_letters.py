"""`swssd dead-letters list | show | retry | purge`: the tasks a daemon gave up on, kept in Redis.

The daemon's config says where: its instance names the stream (`_SWSSD_DEAD_LETTERS:<instance>`,
swssd.orch.dead_letters) and its tables the databases holding one. A dead letter is named
`<db>/<stream id>` (`asic0/APPL_DB/...` in a namespace).

`retry` sends a task back through the daemon's own path, so that it is handled with the table's
current rules (merge, Retry, backoff, max_attempts) as if it had just arrived: a state table's
task is written again through ProducerStateTable, a queue's through ProducerTable, a
notification sent again; a subscriber table's entry, when it still exists, is rewritten with its
current values, which the daemon reads whole (a deleted entry's DEL cannot be sent again). The
dead letter is then removed; failing again makes a new one. A zmq table's task came over ZMQ,
which keeps nothing to send again: it is left, and said so.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from ..channels.notification_producer import NotificationProducer
from ..channels.producer_state_table import ProducerStateTable
from ..channels.producer_table import ProducerTable
from ..channels.table import Table
from ..errors import ConfigError
from ..fields import DEL_COMMAND
from ..orch.config import DEFAULT_CONFIG, Config, TableConfig
from ..orch.config_file import load_config
from ..orch.dead_letters import DeadLetter, decode, stream_key
from ..orch.orch import connector_key
from ..redis.connector import DBConnector
from ..redis.dbconfig import SonicDBGlobalConfig
from ..schema import DATABASES

#: entries read from a stream per XRANGE call
_PAGE = 1000
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


class DeadLetterArgsError(ValueError):
    """A selection that names nothing valid (a malformed id or duration)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    config_help = f"the daemon's TOML config: its Redis, instance and tables (default: {DEFAULT_CONFIG})"
    # before or after the action: `swssd dead-letters --config F list` and `... list --config F`
    parser.add_argument("--config", "-c", metavar="FILE", dest="config_before", help=config_help)
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", "-c", metavar="FILE", help=config_help)
    select = argparse.ArgumentParser(add_help=False)
    select.add_argument("ids", nargs="*", metavar="ID", help="dead letters by id (<db>/<stream id>, as list prints)")
    select.add_argument("--all", action="store_true", help="every dead letter: the same as no selection")
    select.add_argument("--table", help="only this table's")
    select.add_argument("--key", metavar="PATTERN", help="only keys matching this glob (fnmatch: *, ?, [...])")
    select.add_argument("--older-than", metavar="AGE", help="only those dead-lettered longer ago than AGE "
                        "(seconds, or 30s, 10m, 2h, 7d)")
    listing = actions.add_parser("list", parents=[common, select], help="one line per dead letter, oldest first",
                                 description="One line per dead letter: id, time, table, op, key, attempts, reason.")
    listing.add_argument("--json", action="store_true", help="one JSON object a line, fields included")
    actions.add_parser("show", parents=[common], help="one dead letter in full, its fields included",
                       description="One dead letter in full.").add_argument("id", metavar="ID")
    actions.add_parser("retry", parents=[common, select], help="send dead letters through the daemon again",
                       description="Send the selected dead letters (all without a selection) back through the "
                       "daemon's own path (the table's channel), then remove them: each is handled with the "
                       "table's current rules as if it had just arrived. The daemon must be running to handle them.")
    actions.add_parser("purge", parents=[common, select], help="remove dead letters",
                       description="Remove the selected dead letters (all of them without a selection).")


def parse_age(text: str) -> float:
    """`90`, `90s`, `10m`, `2h`, `7d` -> seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise DeadLetterArgsError(f"--older-than {text!r}: give seconds, or a number with s, m, h or d (10m, 2h)")
    return float(match.group(1)) * _UNITS[match.group(2)]


def _databases(config: Config) -> list[tuple[str, str]]:
    """(db, namespace) of every table the config consumes, once each, in config order."""
    seen: dict[tuple[str, str], None] = {}
    for orch in config.orchs:
        for t in orch.tables:
            seen.setdefault((t.db, t.namespace), None)
    return list(seen)


async def _connect(config: Config, name: str, namespace: str) -> DBConnector:
    redis = config.redis
    options = redis.client_options()
    if namespace:
        global_config = SonicDBGlobalConfig.load(redis.database_global_config)
        return await DBConnector.connect(name, global_config, namespace=namespace, **options)
    path = config.database_config_path()
    if path is not None:
        return await DBConnector.connect(name, path, **options)
    if redis.url is None:
        raise ConfigError(config.path, "redis", "no Redis configured: set database_config or url")
    db_id, separator = DATABASES[name]
    return await DBConnector.from_url(redis.url, db_id=db_id, separator=separator, name=name, **options)


class Stores:
    """The dead-letter streams of one daemon config, one per database it consumes."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.key = stream_key(config.daemon.instance)
        self.connectors: dict[str, DBConnector] = {}

    async def open(self) -> None:
        for name, namespace in _databases(self.config):
            self.connectors[connector_key(name, namespace)] = await _connect(self.config, name, namespace)

    async def close(self) -> None:
        for db in self.connectors.values():
            await db.close()

    async def entries(self) -> list[tuple[str, DeadLetter]]:
        """(database, dead letter) for every stored one, oldest first per database."""
        found: list[tuple[str, DeadLetter]] = []
        for name, db in self.connectors.items():
            start = "-"
            while True:
                page: list[Any] = await db.redis.execute_command("XRANGE", self.key, start, "+", "COUNT", _PAGE)
                for entry_id, fields in page:
                    pairs = fields.items() if isinstance(fields, dict) else zip(fields[::2], fields[1::2])
                    found.append((name, decode(_text(entry_id), {_text(k): _text(v) for k, v in pairs})))
                if len(page) < _PAGE:
                    break
                start = "(" + _text(page[-1][0])
        return found

    async def remove(self, name: str, entry_id: str) -> None:
        await self.connectors[name].redis.xdel(self.key, entry_id)


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def full_id(name: str, letter: DeadLetter) -> str:
    return f"{name}/{letter.id}"


def _selected(entries: list[tuple[str, DeadLetter]], args: argparse.Namespace) -> list[tuple[str, DeadLetter]]:
    ids = set(getattr(args, "ids", []) or [])
    if getattr(args, "all", False) and (ids or args.table or args.key or args.older_than):
        raise DeadLetterArgsError("--all selects every dead letter: give it alone, or a selection without it")
    for given in ids:
        if "/" not in given:
            raise DeadLetterArgsError(f"{given!r} is no dead-letter id: ids are <db>/<stream id>, as list prints them")
    cutoff = time.time() - parse_age(args.older_than) if getattr(args, "older_than", None) else None
    out = []
    for name, letter in entries:
        if ids and full_id(name, letter) not in ids:
            continue
        if getattr(args, "table", None) and letter.table != args.table:
            continue
        if getattr(args, "key", None) and not fnmatch.fnmatchcase(letter.key, args.key):
            continue
        if cutoff is not None and letter.time > cutoff:
            continue
        out.append((name, letter))
    return out


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _line(name: str, letter: DeadLetter) -> str:
    return (f"{full_id(name, letter)}  {_when(letter.time)}  {letter.table}  {letter.op}  {letter.key!r}  "
            f"attempts={letter.attempts}  reason: {letter.reason}")


def _table_config(config: Config, letter: DeadLetter) -> TableConfig | None:
    for orch in config.orchs:
        for t in orch.tables:
            if (t.db, t.namespace, t.table) == (letter.db, letter.namespace, letter.table):
                return t
    return None


async def _send_again(db: DBConnector, kind: str, letter: DeadLetter) -> str | None:
    """Send one task back through its table's channel; the reason it cannot be, else None."""
    task = letter.task
    if kind == "state":
        producer = ProducerStateTable(db, letter.table)
        await (producer.delete(task.key) if task.op == DEL_COMMAND else producer.set(task.key, task.fvs))
    elif kind == "queue":
        queue = ProducerTable(db, letter.table)
        await (queue.delete(task.key) if task.op == DEL_COMMAND else queue.set(task.key, task.fvs))
    elif kind == "notification":
        await NotificationProducer(db, letter.table).send(task.op, task.key, task.fvs)
    elif kind == "subscriber":
        table = Table(db, letter.table)
        current = await table.get(task.key)
        if task.op == DEL_COMMAND or not current:
            return ("the entry no longer exists: a subscriber table's task is its entry as Redis holds it, and "
                    "there is none to send again")
        field, value = current[0]
        await table.hset(task.key, field, value)  # unchanged, but a keyspace event: the daemon reads it again
    else:
        return f"a {kind} table's task came over ZMQ, which keeps nothing to send again; send it from its producer"
    return None


async def run(args: argparse.Namespace) -> int:
    config = load_config(args.config or args.config_before or DEFAULT_CONFIG)
    stores = Stores(config)
    try:
        await stores.open()
        entries = await stores.entries()
        if args.action == "show":
            found = [(n, letter) for n, letter in entries if full_id(n, letter) == args.id]
            if not found:
                print(f"swssd dead-letters: no dead letter {args.id!r} (ids as `list` prints them)", file=sys.stderr)
                return 1
            name, letter = found[0]
            print(json.dumps({**letter.as_dict(), "id": full_id(name, letter), "when": _when(letter.time)},
                             indent=2, ensure_ascii=False))
            return 0
        chosen = _selected(entries, args)
        if args.action == "list":
            for line in _listing(chosen, args.json):
                print(line)
            return 0
        if args.action == "purge":
            for name, letter in chosen:
                await stores.remove(name, letter.id)
            print(f"purged {len(chosen)} dead letter{'s' if len(chosen) != 1 else ''}")
            return 0
        return await _retry(config, stores, chosen)
    finally:
        await stores.close()


def _listing(chosen: list[tuple[str, DeadLetter]], as_json: bool) -> Iterator[str]:
    for name, letter in chosen:
        if as_json:
            yield json.dumps({**letter.as_dict(), "id": full_id(name, letter)}, ensure_ascii=False)
        else:
            yield _line(name, letter)


async def _retry(config: Config, stores: Stores, chosen: list[tuple[str, DeadLetter]]) -> int:
    sent = 0
    kept = 0
    for name, letter in chosen:
        table = _table_config(config, letter)
        kind = table.resolved_kind if table is not None else None
        if kind is None:
            problem: str | None = (f"{letter.db} {letter.table} is not a table of this config: retry it with the "
                                   "config of the daemon that consumes it")
        else:
            problem = await _send_again(stores.connectors[name], kind, letter)
        if problem is not None:
            kept += 1
            print(f"not retried {full_id(name, letter)} ({letter.table} {letter.op} {letter.key!r}): {problem}",
                  file=sys.stderr)
            continue
        await stores.remove(name, letter.id)
        sent += 1
        print(f"retried {full_id(name, letter)}: {letter.table} {letter.op} {letter.key!r}")
    print(f"{sent} sent to the daemon again" + (f", {kept} kept" if kept else ""))
    return 1 if kept else 0
