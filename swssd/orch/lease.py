"""The lease of a daemon instance name on a Redis server: two daemons never share in-flight records.

A daemon's in-flight records and dead-letter lists are named by its `[daemon] instance`; a second
daemon popping under the same name would hand the first one's batches over as its own. So each
daemon holds `_SWSSD_INSTANCE:<instance>` (value `host:pid`, a time to live refreshed while it runs)
on every database it pops reliably. A lease left by a process that is gone from this host is taken
over at once (a restart after SIGKILL); one held by a live process refuses the start.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import structlog
from redis.exceptions import RedisError, ResponseError

from ..lua import INSTANCE_LEASE
from ..redis.connector import DBConnector
from .own_keys import set_aside

log = structlog.get_logger("swssd.daemon")

#: Instance names this process holds (an in-process daemon restarted in tests has our pid too).
_HELD_HERE: set[tuple[str, str]] = set()


class InstanceInUseError(Exception):
    """Another live daemon holds the instance name."""


def lease_key(instance: str) -> str:
    return f"_SWSSD_INSTANCE:{instance}"


def _is_holder(value: str) -> bool:
    """Whether a lease value is what a daemon writes: `host:pid`."""
    host, sep, pid = value.rpartition(":")
    return bool(host) and bool(sep) and pid.isdigit()


class InstanceLease:
    """The claim of `instance` on the database of `db`; acquire() once, then it refreshes itself
    until release()."""

    def __init__(self, db: DBConnector, instance: str, ttl: float = 10.0) -> None:
        self.db = db
        self.instance = instance
        self.key = lease_key(instance)
        self.ttl_ms = int(ttl * 1000)
        self.holder = f"{socket.gethostname()}:{os.getpid()}"
        self._here = (db.address + f"/{db.db_id}", instance)
        self._refresher: asyncio.Task[None] | None = None
        #: set when another process took the lease while this one ran
        self.lost = asyncio.Event()

    async def acquire(self) -> None:
        """Take the lease, or take it over from a dead process of this host; raises
        InstanceInUseError when a live process holds it."""
        expected = ""
        for _ in range(5):
            ok, current = await self._swap(expected, self.holder)
            if ok:
                if expected:
                    log.warning("instance lease taken over from a process that is gone", instance=self.instance,
                                db=self.db.name, previous=expected)
                _HELD_HERE.add(self._here)
                self._refresher = asyncio.ensure_future(self._refresh())
                return
            if current and not _is_holder(current):
                await set_aside(self.db, self.key, "malformed", f"not a host:pid lease holder: {current!r}")
                expected = ""
                continue
            if current and not self._gone(current):
                raise InstanceInUseError(
                    f"instance {self.instance!r} is in use by {current} (lease {self.key} on {self.db.address}); "
                    "stop that daemon or give this one another [daemon] instance"
                )
            expected = current
        raise InstanceInUseError(f"instance {self.instance!r}: lease {self.key} keeps changing hands")

    def _gone(self, holder: str) -> bool:
        """Whether the process holding the lease no longer runs (only knowable on this host)."""
        host, _, pid_text = holder.rpartition(":")
        if host != socket.gethostname() or not pid_text.isdigit():
            return False
        pid = int(pid_text)
        if pid == os.getpid():
            return self._here not in _HELD_HERE  # an earlier daemon of this process that did not release
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        try:  # a recycled pid: alive, but not a swssd
            return b"swssd" not in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False

    async def _swap(self, expected: str, new: str) -> tuple[bool, str]:
        try:
            ok, current = await self.db.evalsha(INSTANCE_LEASE, [self.key], [expected, new, self.ttl_ms])
        except ResponseError as exc:
            if "WRONGTYPE" not in str(exc):
                raise
            # not a lease any daemon wrote: nobody holds it
            await set_aside(self.db, self.key, "wrong-type", str(exc))
            ok, current = await self.db.evalsha(INSTANCE_LEASE, [self.key], [expected, new, self.ttl_ms])
        return bool(ok), str(current)

    async def _refresh(self) -> None:
        while True:
            await asyncio.sleep(self.ttl_ms / 3000)
            try:
                ok, current = await self._swap(self.holder, self.holder)
                if not ok and not current:  # expired (e.g. Redis restarted without persistence)
                    ok, current = await self._swap("", self.holder)
            except (RedisError, OSError):
                continue  # Redis unreachable: the pops report it; try again
            if not ok:
                log.critical("instance lease lost to another process", instance=self.instance, holder=current)
                self.lost.set()
                return

    async def release(self) -> None:
        """Give the lease up (only when still ours)."""
        if self._refresher is not None:
            self._refresher.cancel()
            await asyncio.wait((self._refresher,))
            self._refresher = None
        _HELD_HERE.discard(self._here)
        try:
            await asyncio.wait_for(self._swap(self.holder, ""), 2.0)
        except (RedisError, OSError, TimeoutError) as exc:
            log.warning("instance lease not released; it expires by itself", instance=self.instance, error=str(exc))
