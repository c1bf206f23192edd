"""Running a program's main coroutine the way the daemon runs: on uvloop unless told not to.

The table library is measured on uvloop (BENCHMARKS.md: a single set costs about a third less
on it than on asyncio's default loop), so `swssd.run(main())` is the one-line way to get that.
Opting out: `swssd.run(main(), use_uvloop=False)`, `SWSSD_NO_UVLOOP=1` in the environment, or
simply `asyncio.run(main())`: every class works on any asyncio loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

import uvloop

T = TypeVar("T")

#: Set to 1 (or true/yes) to run on asyncio's default loop.
NO_UVLOOP_ENV = "SWSSD_NO_UVLOOP"


def run(main: Coroutine[Any, Any, T], *, use_uvloop: bool | None = None, debug: bool | None = None) -> T:
    """Run `main` to completion on a new event loop (uvloop's by default) and return its result."""
    if use_uvloop is None:
        use_uvloop = os.environ.get(NO_UVLOOP_ENV, "").lower() not in ("1", "true", "yes")
    if use_uvloop:
        return uvloop.run(main, debug=debug)
    return asyncio.run(main, debug=debug)
