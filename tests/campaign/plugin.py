"""The campaign's mirror plugin, loaded by the daemon subprocess (PYTHONPATH=tests):
`campaign.plugin:CampaignOrch`.

It appends what each handler call saw to the file named by option `record`, one JSON line a task
([table, key, op, [[field, value], ...]]), written before the call returns, so what a SIGKILL
interrupts is at most the line being written (read_records leaves it out). One file per daemon
process: a killed one's half line cannot run into the next one's. A file, not Redis: the faults
restart and wipe Redis, never the file system.

Per call, as the schedule's HandlerFaults say: sleep (slow), raise Retry, or raise an error (retried
with backoff) before recording, so only the call that succeeded is recorded.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from typing import IO

from swssd import KeyOpFieldsValues, Orch, Retry


class CampaignOrch(Orch):
    async def start(self) -> None:
        self._out: IO[str] = open(self.options["record"], "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        self._rng = random.Random(int(self.options.get("seed", 0)) * 1_000_003 + os.getpid())
        self._slow_rate = float(self.options.get("slow_rate", 0))
        self._slow_seconds = float(self.options.get("slow_seconds", 0))
        self._retry_rate = float(self.options.get("retry_rate", 0))
        self._fail_rate = float(self.options.get("fail_rate", 0))

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        roll = self._rng.random()
        if roll < self._slow_rate:
            await asyncio.sleep(self._slow_seconds)
        roll = self._rng.random()
        if roll < self._retry_rate:
            raise Retry("campaign: not now")
        if roll < self._retry_rate + self._fail_rate:
            raise RuntimeError("campaign: a failing handler")
        self._out.write(json.dumps([table, task.key, task.op, task.fvs]) + "\n")

    async def stop(self) -> None:
        self._out.close()
