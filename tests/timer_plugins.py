"""Orch plugins with timers for the daemon tests, imported by the daemon subprocess (PYTHONPATH=tests).

Each timer call appends [timer, what, unix time] to the file named by the `record` option, one
JSON line flushed at once: what = "start", "end" (also of a call cancelled by handler_timeout) or
"raise"; stop() appends ["", "stop", time].
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path
from typing import IO

from swssd import KeyOpFieldsValues, Orch, timer


class TimerOrch(Orch):
    """`tick` (declared every 1 s; the tests' config makes it 0.2 s), `flaky` (raises on every
    other call), `slow` (each call 0.25 s, longer than its 0.1 s interval) and `stuck` (while the
    file `hang` exists and `release` does not, it waits and swallows every cancellation). Tasks of
    its table are only counted: it is there to load the loop."""

    async def start(self) -> None:
        self._out: IO[str] = open(self.options["record"], "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        self._hang = Path(self.options.get("hang", "/nonexistent"))
        self._release = Path(self.options.get("release", "/nonexistent"))
        self._flaky_calls = 0
        self.handled = 0

    def note(self, name: str, what: str) -> None:
        self._out.write(json.dumps([name, what, time.time()]) + "\n")

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        self.handled += 1

    @timer(1.0)
    async def tick(self) -> None:
        self.note("tick", "start")
        try:
            await asyncio.sleep(0.01)
        finally:  # a call cancelled (handler_timeout on a loaded machine) ends too
            self.note("tick", "end")

    @timer(0.1, name="flaky", first_delay=0.0)
    async def sometimes_raises(self) -> None:
        self.note("flaky", "start")
        self._flaky_calls += 1
        if self._flaky_calls % 2:
            self.note("flaky", "raise")
            raise ValueError(f"flaky call {self._flaky_calls}")
        self.note("flaky", "end")

    @timer(0.1, jitter=0.02)
    async def slow(self) -> None:
        self.note("slow", "start")
        try:
            await asyncio.sleep(0.25)
        finally:
            self.note("slow", "end")

    @timer(0.2)
    async def stuck(self) -> None:
        self.note("stuck", "start")
        while self._hang.exists() and not self._release.exists():
            with contextlib.suppress(asyncio.CancelledError):  # a call that will not be stopped
                await asyncio.sleep(0.05)
        self.note("stuck", "end")

    async def stop(self) -> None:
        self.note("", "stop")
        self._out.close()
