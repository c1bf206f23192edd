"""Compressed inputs checked before Spark reads them: a `.gz` file that is truncated or not gzip
at all fails Spark's whole job (hundreds of lines of Java and Python traceback) at the first
record past the damage. Each local `.gz` input is read through once in a thread while the JVM
starts (zlib works outside the GIL); one that cannot be read is left out and counted as a
rejected file, and the other inputs are replayed as usual."""

from __future__ import annotations

import gzip
import threading
import zlib
from collections.abc import Sequence
from pathlib import Path

_CHUNK = 1 << 20


def gzip_problem(path: str) -> str | None:
    """Why `path` cannot be read as gzip to its end; None when it can."""
    try:
        with gzip.open(path, "rb") as f:
            while f.read(_CHUNK):
                pass
    except (OSError, EOFError, zlib.error) as exc:
        return f"not a readable gzip file: {exc}"
    return None


class GzipCheck:
    """The check of the local `.gz` paths among `paths`, running in a thread from construction."""

    def __init__(self, paths: Sequence[str]) -> None:
        self._paths = [p for p in paths if p.endswith(".gz") and "://" not in p.removeprefix("file://")]
        self._found: dict[str, str] = {}
        self._thread = threading.Thread(target=self._run, name="swssd-gzip-check", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for path in self._paths:
            problem = gzip_problem(path.removeprefix("file://"))
            if problem is not None:
                self._found[path] = problem

    def unreadable(self) -> dict[str, str]:
        """Path -> why, once the check is done (waits for it)."""
        self._thread.join()
        return dict(self._found)


def file_uri(path: str) -> str:
    """How Spark names a local input file in a reject's `source`."""
    return path if "://" in path else Path(path).absolute().as_uri().replace("file:///", "file:/", 1)
