"""A TCP proxy between the daemon and Redis that can delay, stall and cut its connections.

It runs its own asyncio loop in a thread, so faults keep their timing whatever the campaign's
loop is doing (a blocking redis-server restart, say).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

from swssd.redis.embedded_redis import free_port


class FaultProxy:
    """Listens on 127.0.0.1:`port`, forwards each connection to 127.0.0.1:`upstream`."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.port = free_port()
        self.delay = 0.0                 # seconds added before each forwarded chunk
        self._flowing = threading.Event()
        self._flowing.set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fault-proxy", daemon=True)
        self.connections = 0
        self.cuts = 0

    def start(self) -> FaultProxy:
        self._thread.start()
        self._ready.wait(10)
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", self.port))
        self._ready.set()
        self._loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            writer.close()
            return
        self.connections += 1
        self._writers |= {writer, up_writer}
        pumps = [asyncio.ensure_future(self._pump(reader, up_writer)),
                 asyncio.ensure_future(self._pump(up_reader, writer))]
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for pump in pumps:
            pump.cancel()
        for w in (writer, up_writer):
            self._writers.discard(w)
            w.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                while not self._flowing.is_set():
                    await asyncio.sleep(0.02)
                if self.delay:
                    await asyncio.sleep(self.delay)
                writer.write(data)
                await writer.drain()

    # -- the faults (callable from any thread) --------------------------------------------

    def stall(self) -> None:
        """Forward nothing (connections stay open) until flow()."""
        self._flowing.clear()

    def flow(self) -> None:
        self._flowing.set()
        self.delay = 0.0

    def cut(self) -> None:
        """Close every connection now."""
        def close_all() -> None:
            for w in list(self._writers):
                w.transport.abort()
        self.cuts += 1
        self._loop.call_soon_threadsafe(close_all)

    def close(self) -> None:
        def stop() -> None:
            self._server.close()
            for w in list(self._writers):
                w.transport.abort()
            self._loop.stop()
        self._loop.call_soon_threadsafe(stop)
        self._thread.join(5)
