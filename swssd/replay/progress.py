"""A progress line on stderr while a replay job runs longer than a few seconds.

Spark's own console progress bar is off (it redraws a line with carriage returns, unreadable in
logs); instead, once a command has run `after` seconds, one line every `interval` seconds says
how long it has been running and how far the active stages are.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TextIO

from pyspark.sql import SparkSession


class Progress:
    """Context manager: prints progress lines while the block runs."""

    def __init__(
        self, spark: SparkSession, after: float = 5.0, interval: float = 10.0, stream: TextIO | None = None
    ) -> None:
        self.spark = spark
        self.after = after
        self.interval = interval
        self.stream = stream if stream is not None else sys.stderr
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="swssd-replay-progress", daemon=True)
        self._started = 0.0

    def __enter__(self) -> Progress:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._done.set()
        self._thread.join(timeout=5)

    def line(self) -> str:
        """What the job is doing now, in one line."""
        tracker = self.spark.sparkContext.statusTracker()
        parts = []
        for stage_id in sorted(tracker.getActiveStageIds()):
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                parts.append(f"stage {stage_id}: {info.numCompletedTasks}/{info.numTasks} tasks")
        doing = ", ".join(parts) or "between stages"
        return f"swssd replay: running for {time.monotonic() - self._started:.0f} s ({doing})"

    def _run(self) -> None:
        if self._done.wait(self.after):
            return
        while not self._done.is_set():
            try:
                print(self.line(), file=self.stream, flush=True)
            except Exception:  # a progress line is never worth failing the job
                return
            self._done.wait(self.interval)
