"""systemd's notify protocol over $NOTIFY_SOCKET, with the standard library only.

READY=1 once the daemon serves, WATCHDOG=1 from the event loop itself (so a stuck loop
misses its pings and systemd restarts it, while a merely busy loop still pings), STATUS=
lines for `systemctl status`, RELOADING=1 on SIGHUP and STOPPING=1 on shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import Callable

import structlog

log = structlog.get_logger(__name__)


class SystemdNotifier:
    """Sends notify datagrams; every method is a no-op when not run by systemd."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        if address.startswith("@"):
            address = "\0" + address[1:]  # abstract namespace
        self._address = address or None
        self._sock: socket.socket | None = None
        self._dropping = False  # a datagram was dropped and not yet said so
        self.watchdog_interval = self._watchdog_interval(env)
        self._watchdog_task: asyncio.Task[None] | None = None
        self._healthy: Callable[[], bool] = lambda: True

    @staticmethod
    def _watchdog_interval(env: dict[str, str] | os._Environ[str]) -> float | None:
        """Half of $WATCHDOG_USEC, when the watchdog is meant for this process."""
        usec = env.get("WATCHDOG_USEC")
        pid = env.get("WATCHDOG_PID")
        if not usec or (pid and pid.isdigit() and int(pid) != os.getpid()):
            return None
        try:
            value = int(usec)
        except ValueError:
            return None
        return value / 1e6 / 2 if value > 0 else None

    @property
    def enabled(self) -> bool:
        return self._address is not None

    def notify(self, *lines: str) -> None:
        """Send `KEY=value` lines in one datagram; errors are logged, never raised.

        The socket never blocks: a notify socket nobody reads (its queue full) would otherwise
        freeze the event loop in sendto. Such a datagram is dropped, with one warning until a
        send works again."""
        if self._address is None:
            return
        try:
            if self._sock is None:
                self._sock = socket.socket(
                    socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK)
            self._sock.sendto("\n".join(lines).encode(), self._address)
            self._dropping = False
        except BlockingIOError:
            if not self._dropping:
                self._dropping = True
                log.warning("sd_notify dropped: nobody reads the notify socket", address=self._address.lstrip("\0"))
        except OSError as exc:
            log.warning("sd_notify failed", error=str(exc))

    def ready(self, status: str | None = None) -> None:
        self.notify("READY=1", *([f"STATUS={status}"] if status else []))

    def status(self, text: str) -> None:
        self.notify(f"STATUS={text}")

    def reloading(self) -> None:
        # MONOTONIC_USEC lets systemd >= 253 match this to the reload it asked for.
        self.notify("RELOADING=1", f"MONOTONIC_USEC={time.monotonic_ns() // 1000}")

    def stopping(self) -> None:
        self.notify("STOPPING=1")

    def start_watchdog(self, healthy: Callable[[], bool] = lambda: True) -> None:
        """Ping WATCHDOG=1 from a task on the running loop at half of $WATCHDOG_USEC, while
        `healthy()` says so: systemd then restarts a daemon whose loop or workers stopped."""
        if self.watchdog_interval is None or self._address is None or self._watchdog_task:
            return
        self._healthy = healthy
        self._watchdog_task = asyncio.get_running_loop().create_task(self._watchdog())

    async def _watchdog(self) -> None:
        assert self.watchdog_interval is not None
        while True:
            if self._healthy():
                self.notify("WATCHDOG=1")
            await asyncio.sleep(self.watchdog_interval)

    async def close(self) -> None:
        if self._watchdog_task is not None:
            self._watchdog_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog_task
            self._watchdog_task = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
