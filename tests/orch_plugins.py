"""Orch plugins for the daemon tests, imported by the daemon subprocess (PYTHONPATH=tests).

Handled tasks are appended to the file named by the `record` option, one JSON line each:
[table, key, op, [[field, value], ...]]. A line is flushed as soon as it is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from pathlib import Path
from typing import IO

from swssd import KeyOpFieldsValues, Orch, Retry, Table


class RecordingOrch(Orch):
    """Records every task; `delay` seconds per task make it slow."""

    async def start(self) -> None:
        self._out: IO[str] = open(self.options["record"], "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        self._delay = float(self.options.get("delay", 0))

    def record(self, table: str, task: KeyOpFieldsValues) -> None:
        self._out.write(json.dumps([table, task.key, task.op, task.fvs]) + "\n")

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        if self._delay:
            await asyncio.sleep(self._delay)
        self.record(table, task)

    async def stop(self) -> None:
        self._out.close()


class StampOrch(RecordingOrch):
    """Records [key, unix time the handler got it] instead: how late a change is delivered."""

    def record(self, table: str, task: KeyOpFieldsValues) -> None:
        self._out.write(json.dumps([task.key, time.time()]) + "\n")


class BatchRecordingOrch(RecordingOrch):
    """Records through handle_batch()."""

    async def handle_batch(self, table: str, tasks: list[KeyOpFieldsValues]) -> None:
        for task in tasks:
            self.record(table, task)


class TroubleOrch(RecordingOrch):
    """Misbehaves by key prefix: `fail*` always raises, `flaky*` raises twice then works, `hang*`
    never returns, `wait*` raises Retry until STATE_DB `GATE|<key>` exists, `broken*` raises until
    STATE_DB `FIX|<key>` exists (a failure whose cause an operator fixes). Other keys work."""

    databases = ("STATE_DB",)

    async def start(self) -> None:
        await super().start()
        self._gates = Table(self.connector("STATE_DB"), "GATE")
        self._fixes = Table(self.connector("STATE_DB"), "FIX")
        self._calls: dict[str, int] = {}

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        key = task.key
        calls = self._calls[key] = self._calls.get(key, 0) + 1
        if key.startswith("fail"):
            raise RuntimeError(f"boom {key}")
        if key.startswith("flaky") and calls <= 2:
            raise ValueError(f"flaky {key} call {calls}")
        if key.startswith("hang"):
            await asyncio.Event().wait()
        if key.startswith("wait") and await self._gates.get(key) is None:
            raise Retry(f"gate {key} closed")
        if key.startswith("broken") and await self._fixes.get(key) is None:
            raise RuntimeError(f"no route to {key}'s next hop")
        self.record(table, task)


class BlockingOrch(RecordingOrch):
    """Records every task; a key starting with `block` is held in handle() until the file named by
    option `release` exists: a handler that cannot go on (as one awaiting an event nobody sets),
    and that a test can let go."""

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        if task.key.startswith("block"):
            release = Path(self.options["release"])
            while not release.exists():
                await asyncio.sleep(0.05)
        self.record(table, task)


class StubbornStartOrch(RecordingOrch):
    """start() never ends and swallows the first cancellation, as Python 3.11's asyncio.wait_for
    can lose one: a daemon told to stop while starting must ask again."""

    async def start(self) -> None:
        await super().start()
        self._out.write("starting\n")
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(3600)
        await asyncio.sleep(3600)


class FailingStartOrch(Orch):
    async def start(self) -> None:
        raise RuntimeError("cannot reach the ASIC")

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        raise AssertionError("never started")


class MirrorOrch(Orch):
    """Mirrors every table it consumes into STATE_DB `MIRROR_<TABLE>|<key>`: SET writes the fields,
    DEL removes the entry. With option `fail_once`, the first call for each key raises."""

    databases = ("STATE_DB",)

    async def start(self) -> None:
        self._db = self.connector("STATE_DB")
        self._fail_once = bool(self.options.get("fail_once"))
        self._failed: set[tuple[str, str]] = set()

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        if self._fail_once and (table, task.key) not in self._failed:
            self._failed.add((table, task.key))
            raise RuntimeError(f"first call for {table} {task.key} fails")
        name = f"MIRROR_{table}|{task.key}"
        if task.op == "DEL":
            await self._db.redis.delete(name)
        else:
            await self._db.redis.hset(name, mapping=dict(task.fvs))


class Poison(BaseException):
    """Not an Exception: what no handler error path catches, so the table's worker dies of it."""


class PoisonOrch(RecordingOrch):
    """Records every task; a key starting with `poison` kills the worker (a crash, not a failure)."""

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        if task.key.startswith("poison"):
            raise Poison(task.key)
        self.record(table, task)


class SlowCountingOrch(Orch):
    """Sleeps `delay` seconds per task and writes only how many it handled (to `record`): for
    floods of large values, which RecordingOrch would copy to its file."""

    async def start(self) -> None:
        self._path = self.options["record"]
        self._delay = float(self.options.get("delay", 0))
        self._count = 0

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        await asyncio.sleep(self._delay)
        self._count += 1
        if self._count % 10 == 0:
            with open(self._path, "w", encoding="utf-8") as out:
                out.write(str(self._count))


class HostileOrch(RecordingOrch):
    """Records every task; a key starting with `fail` raises an error whose message holds the
    key and the fields (as a plugin's own error text often does), one starting with `poison`
    kills the worker the same way (a crash, not a failure)."""

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        if task.key.startswith("fail"):
            raise RuntimeError(f"cannot apply {task.key} {task.fvs}")
        if task.key.startswith("poison"):
            raise Poison(f"{task.key} {task.fvs}")
        self.record(table, task)


class ExitingMirrorOrch(MirrorOrch):
    """A MirrorOrch whose handler ends the process at once (os._exit(1), no cleanup at all) for a
    key starting with `poison`: a true poison task."""

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        if task.key.startswith("poison"):
            os._exit(1)
        await super().handle(table, task)
