"""The notify protocol, checked on a datagram socket the test binds itself."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from swssd.ops.sdnotify import SystemdNotifier


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(2.0)
    yield sock, path
    sock.close()


def received(sock: socket.socket) -> list[str]:
    out = []
    sock.setblocking(False)
    try:
        while True:
            out.append(sock.recv(4096).decode())
    except BlockingIOError:
        pass
    finally:
        sock.setblocking(True)
    return out


async def test_messages_in_order(notify_socket: tuple[socket.socket, str]) -> None:
    sock, path = notify_socket
    n = SystemdNotifier({"NOTIFY_SOCKET": path})
    assert n.enabled
    n.ready("consuming 3 tables")
    n.status("popped 10")
    n.reloading()
    n.stopping()
    await n.close()
    msgs = received(sock)
    assert msgs[0] == "READY=1\nSTATUS=consuming 3 tables"
    assert msgs[1] == "STATUS=popped 10"
    assert msgs[2].startswith("RELOADING=1\nMONOTONIC_USEC=")
    assert msgs[3] == "STOPPING=1"


async def test_watchdog_pings_at_half_interval(notify_socket: tuple[socket.socket, str]) -> None:
    sock, path = notify_socket
    n = SystemdNotifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": str(os.getpid())})
    assert n.watchdog_interval == pytest.approx(0.1)
    n.start_watchdog()
    await asyncio.sleep(0.45)
    await n.close()
    pings = [m for m in received(sock) if m == "WATCHDOG=1"]
    assert 3 <= len(pings) <= 7


async def test_stuck_loop_misses_watchdog(notify_socket: tuple[socket.socket, str]) -> None:
    """The pings come from the loop itself: a blocked loop sends none."""
    sock, path = notify_socket
    n = SystemdNotifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "100000"})
    n.start_watchdog()
    await asyncio.sleep(0)  # first ping
    received(sock)
    import time

    time.sleep(0.3)  # the loop is stuck: no task runs
    assert received(sock) == []
    await n.close()


async def test_watchdog_stops_while_unhealthy(notify_socket: tuple[socket.socket, str]) -> None:
    """A daemon with a table worker stopped is no longer pinging: systemd restarts it."""
    sock, path = notify_socket
    healthy = True
    n = SystemdNotifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "100000"})
    n.start_watchdog(healthy=lambda: healthy)
    await asyncio.sleep(0.2)
    assert "WATCHDOG=1" in received(sock)
    healthy = False
    await asyncio.sleep(0.06)
    received(sock)
    await asyncio.sleep(0.25)
    assert "WATCHDOG=1" not in received(sock)
    await n.close()


def test_watchdog_for_another_pid_is_ignored() -> None:
    n = SystemdNotifier({"NOTIFY_SOCKET": "/nonexistent", "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"})
    assert n.watchdog_interval is None or os.getpid() == 1


def test_disabled_without_socket() -> None:
    n = SystemdNotifier({})
    assert not n.enabled
    n.ready()  # no-op, no error


def test_abstract_socket_address() -> None:
    name = f"swssd-test-{os.getpid()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(2)
    try:
        SystemdNotifier({"NOTIFY_SOCKET": "@" + name}).ready()
        assert sock.recv(100) == b"READY=1"
    finally:
        sock.close()


def test_a_notify_socket_nobody_reads_never_blocks(notify_socket: tuple[socket.socket, str]) -> None:
    """Datagrams to a full queue are dropped with one warning; the caller (the event loop) goes on."""
    sock, path = notify_socket
    notifier = SystemdNotifier({"NOTIFY_SOCKET": path})
    sent = threading.Event()

    def flood() -> None:
        for i in range(20_000):  # far past an unread socket's queue (max_dgram_qlen, 512 by default)
            notifier.status(f"tick {i}")
        sent.set()

    with structlog.testing.capture_logs() as logs:
        threading.Thread(target=flood, daemon=True).start()
        assert sent.wait(20), "notify() blocked on a notify socket nobody reads"
    dropped = [e for e in logs if e["event"].startswith("sd_notify dropped")]
    assert len(dropped) == 1, logs[:5]
    first = received(sock)
    assert first and first[0] == "STATUS=tick 0"
    notifier.status("after")  # the queue has room again: sent, and the next drop warns again
    assert received(sock) == ["STATUS=after"]
