"""An Orch plugin for the warm-restart tests, imported by the daemon subprocess (PYTHONPATH=tests).

Appends one JSON line per event to the file named by the `record` option, flushed at once:
["start", warm_start], ["restore", table, key, op, fvs], ["handle", table, key, op, fvs],
["reconcile"], ["stop"], each with the unix time last. `reconcile_now = true` asks for the
reconcile as soon as its tables are restored.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import IO, Any

from swssd import KeyOpFieldsValues, Orch


class WarmRecordingOrch(Orch):
    async def start(self) -> None:
        self._out: IO[str] = open(self.options["record"], "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        self.note("start", self.warm_start)

    def note(self, *items: Any) -> None:
        self._out.write(json.dumps([*items, time.time()]) + "\n")

    async def restore(self, table: str, tasks: list[KeyOpFieldsValues]) -> None:
        for task in tasks:
            self.note("restore", table, task.key, task.op, task.fvs)
        if self.options.get("reconcile_now"):
            self.reconcile_now()

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        self.note("handle", table, task.key, task.op, task.fvs)

    async def reconcile(self) -> None:
        self.note("reconcile")

    async def stop(self) -> None:
        self.note("stop")
        self._out.close()


class RedisGoneOrch(WarmRecordingOrch):
    """Shuts the redis-server down from its first restore() call: Redis going away mid-restore."""

    async def restore(self, table: str, tasks: list[KeyOpFieldsValues]) -> None:
        await super().restore(table, tasks)
        with contextlib.suppress(Exception):  # the server closes the connection as it goes
            await self.connector("APPL_DB").redis.execute_command("SHUTDOWN", "NOSAVE")
