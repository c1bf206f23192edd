"""Raw MONITOR capture: what `redis-cli MONITOR` shows a C++ SONiC developer, for trace comparisons.

The capture runs on its own socket (not redis-py), so what is compared is exactly the text the
server writes. A capture ends with a unique ECHO sent on another socket: every command issued
before it has been executed, hence seen, by then.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

# "+1665211803.270162 [0 127.0.0.1:58720] "EVALSHA" ..."; the source may also be "lua" or "unix:/path".
_LINE = re.compile(r'^\+?(?P<ts>\d+\.\d+) \[(?P<db>\d+) (?P<src>[^\]]+)\] (?P<args>.*)$')
_ESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t", "a": b"\a", "b": b"\b", '"': b'"', "\\": b"\\"}


@dataclass(frozen=True)
class MonitorLine:
    """One command as MONITOR printed it, timestamp and client address stripped."""

    db: int
    source: str
    text: str  # the quoted argument part, exactly as printed

    @property
    def is_lua(self) -> bool:
        return self.source == "lua"

    @property
    def args(self) -> list[str]:
        return unquote(self.text)

    @property
    def command(self) -> str:
        return self.args[0].upper()


def parse_line(raw: str) -> MonitorLine:
    """Split a MONITOR line (or a line copied from a seed trace) into db, source and arguments."""
    m = _LINE.match(raw.strip())
    if not m:
        raise ValueError(f"not a MONITOR line: {raw!r}")
    return MonitorLine(int(m["db"]), m["src"], m["args"])


def unquote(text: str) -> list[str]:
    """Undo Redis's sdscatrepr quoting of each argument ("..." with \\n, \\", \\xHH escapes)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == " ":
            i += 1
            continue
        if text[i] != '"':
            raise ValueError(f"unquoted argument at {i} in {text[:80]!r}")
        i += 1
        buf = bytearray()
        while text[i] != '"':
            c = text[i]
            if c == "\\":
                nxt = text[i + 1]
                if nxt == "x":
                    buf.append(int(text[i + 2:i + 4], 16))
                    i += 4
                    continue
                buf += _ESCAPES[nxt]
                i += 2
                continue
            buf += c.encode()
            i += 1
        out.append(buf.decode("utf-8", "surrogateescape"))
        i += 1
    return out


class Monitor:
    """A MONITOR connection to one redis-server on loopback TCP."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = port
        self.lines: list[MonitorLine] = []
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def start(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port, limit=1 << 26)
        self._writer.write(b"MONITOR\r\n")
        await self._writer.drain()
        ok = await asyncio.wait_for(self._reader.readline(), 10)
        if not ok.startswith(b"+OK"):
            raise RuntimeError(f"MONITOR refused: {ok!r}")

    async def stop(self) -> list[MonitorLine]:
        """Mark the end with an ECHO from another socket, collect every line before it, close."""
        assert self._reader is not None and self._writer is not None
        marker = f"monitor-end-{uuid.uuid4().hex}"
        r, w = await asyncio.open_connection(self.host, self.port)
        w.write(f"ECHO {marker}\r\n".encode())
        await w.drain()
        await asyncio.wait_for(r.readline(), 10)
        w.close()
        await w.wait_closed()
        try:
            while True:
                raw = await asyncio.wait_for(self._reader.readline(), 10)
                text = raw.decode("utf-8", "surrogateescape").rstrip("\r\n")
                if marker in text:
                    break
                self.lines.append(parse_line(text))
        finally:
            self._writer.close()
            await self._writer.wait_closed()
        return self.lines

    def script_runs(self, sha: str | None = None) -> list[list[MonitorLine]]:
        """Each EVALSHA (of `sha`, if given) with the lua-issued lines that follow it."""
        return script_runs(self.lines, sha)

    def texts(self, *, skip_setup: bool = True) -> list[str]:
        """The argument text of every captured line; SCRIPT LOAD and client handshakes left out."""
        return [ln.text for ln in self.lines if not (skip_setup and _is_setup(ln))]


def _is_setup(line: MonitorLine) -> bool:
    args = line.args
    cmd = args[0].upper()
    return cmd in {"CLIENT", "HELLO", "PING", "SELECT"} or (cmd == "SCRIPT" and args[1].upper() == "LOAD")


def script_runs(lines: list[MonitorLine], sha: str | None = None) -> list[list[MonitorLine]]:
    """Group an EVALSHA line with the lua lines printed right after it (Redis prints EVALSHA first)."""
    runs: list[list[MonitorLine]] = []
    current: list[MonitorLine] | None = None
    for line in lines:
        if line.is_lua:
            if current is not None:
                current.append(line)
            continue
        current = None
        if line.command == "EVALSHA" and (sha is None or line.args[1] == sha):
            current = [line]
            runs.append(current)
    return runs


@asynccontextmanager
async def monitoring(port: int) -> AsyncIterator[Monitor]:
    """`async with monitoring(port) as mon:` ... then read `mon.lines` after the block."""
    mon = Monitor(port)
    await mon.start()
    try:
        yield mon
    finally:
        await mon.stop()
