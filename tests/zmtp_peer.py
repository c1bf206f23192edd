"""A ZMQ peer built by hand on a plain socket, for tests that need peers libzmq would not make:
ones that finish the ZMTP 3.0 handshake (NULL mechanism) and then stay idle, or send a frame
header that declares more than they send. No reconnects, no queues: exactly what is written."""

from __future__ import annotations

import socket
import struct

#: signature, version 3.0, mechanism NULL, as-server 0, filler
GREETING = b"\xff" + bytes(8) + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\x00") + b"\x00" + bytes(31)


def ready_command(socket_type: bytes = b"PUSH") -> bytes:
    body = b"\x05READY" + b"\x0bSocket-Type" + struct.pack(">I", len(socket_type)) + socket_type
    return b"\x04" + bytes([len(body)]) + body


def frame(body: bytes, more: bool = False) -> bytes:
    """One message frame: the last of its message, or with `more` a part that more parts follow."""
    flag = 1 if more else 0
    if len(body) < 256:
        return bytes([flag, len(body)]) + body
    return bytes([flag | 2]) + struct.pack(">Q", len(body)) + body


def long_frame_header(size: int) -> bytes:
    """The header of a frame that declares `size` bytes."""
    return b"\x02" + struct.pack(">Q", size)


def connect(address: tuple[str, int] | str, timeout: float = 5.0) -> socket.socket:
    """A connection to a ZMQ PULL server that has finished the handshake (the server's greeting
    and READY read)."""
    family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.connect(address)
    sock.sendall(GREETING + ready_command())
    head = len(GREETING) + 2  # its greeting, then its READY command's flags and size
    got = b""
    while len(got) < head or len(got) < head + got[head - 1]:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("the server closed the connection during the handshake")
        got += chunk
    return sock


def closed_by_peer(sock: socket.socket, timeout: float = 5.0) -> bool:
    """Whether the server closes the connection within `timeout` (what it sends is skipped)."""
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
