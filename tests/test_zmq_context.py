"""OwnedContext: a client or server dropped without close() never hangs the process.

pyzmq's own Context.__del__ terms a dropped context while the sockets of the same garbage cycle
are still open, and term() then blocks for ever: a whole test run once stopped there, in a test
that had nothing to do with ZMQ, at the collection a dropped server's cycle happened to meet.
"""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import zmq

from swssd.channels.zmq.context import OwnedContext

#: drops a bound server (with its monitor socket) or a connected client, each in a reference
#: cycle, then collects: before OwnedContext, both blocked in Context.term() for ever
DROPPED = """
import asyncio, gc, sys
from swssd.channels.zmq.sockets import ZmqClient, ZmqServer

async def main(endpoint):
    if sys.argv[1] == "server":
        server = ZmqServer(endpoint, max_peers=5)
        client = ZmqClient(endpoint)
        await client.send_msg("APPL_DB", "T", [("k", "SET", [("f", "v")])])
        client.close()
        await asyncio.sleep(0.2)
    else:
        client = ZmqClient(endpoint)
        client.cycle = client

asyncio.run(main(sys.argv[2]))
gc.collect()
print("collected", flush=True)
"""


def _dropped(kind: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", DROPPED, kind, f"ipc://{tmp_path}/zmq"],
                          capture_output=True, text=True, timeout=60)


def test_a_dropped_server_is_collected_without_hanging(tmp_path: Path) -> None:
    done = _dropped("server", tmp_path)
    assert done.returncode == 0 and "collected" in done.stdout, done.stderr


def test_a_dropped_client_in_a_cycle_is_collected_without_hanging(tmp_path: Path) -> None:
    done = _dropped("client", tmp_path)
    assert done.returncode == 0 and "collected" in done.stdout, done.stderr


class _Owner:
    pass


def test_close_closes_the_sockets_then_the_context_once() -> None:
    owner = _Owner()
    context = OwnedContext(owner)
    push = context.socket(zmq.PUSH)
    monitor = context.keep(push.get_monitor_socket())
    assert not context.closed
    context.close()
    assert push.closed and monitor.closed and context.context.closed and context.closed
    context.close()  # a second time: nothing


def test_a_collected_owner_closes_its_sockets_and_context() -> None:
    owner = _Owner()
    context = OwnedContext(owner)
    pull = context.socket(zmq.PULL)
    owner.cycle = (owner, pull)  # type: ignore[attr-defined]
    del owner
    gc.collect()
    assert pull.closed and context.context.closed and context.closed
