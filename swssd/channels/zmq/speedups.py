"""The one-change hot paths in C (_speedups.c) when the extension was built, else in Python.

Every set() and delete() of a ZMQ producer table is one message, and so is nearly every message
a server reads: encoding, handing to libzmq and reading them is most of either side's CPU. The C
functions do exactly what the Python ones do (encoder.py, one_change.py) and hand back what they
do not take. The sender calls the zmq_send of the libzmq pyzmq was built with (found through
pyzmq's own extension module) on the socket pyzmq made, as the C++ producer does.
`SWSSD_NO_SPEEDUPS=1` in the environment keeps the Python code (bench/bench_zmq.py compares).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Sequence
from functools import partial

import zmq

from ...fields import DEL_COMMAND, SET_COMMAND, KeyOpFieldsValues
from .encoder import OneChangeEncoder
from .one_change import read_single as python_read_single

FieldPairs = Sequence[tuple[str, str]]
#: send(socket, key, fvs) -> None when handed to the socket, else the message (see one_change_sender)
Send = Callable[[int, str, FieldPairs], bytes | None]
ReadSingle = Callable[[bytes, bytes], KeyOpFieldsValues | None]


def _zmq_send_address() -> int | None:
    """The address of zmq_send in the libzmq pyzmq's Cython backend links (None: not found)."""
    try:
        from zmq.backend.cython import _zmq

        return ctypes.cast(ctypes.CDLL(_zmq.__file__).zmq_send, ctypes.c_void_p).value
    except (ImportError, OSError, AttributeError):  # another backend (cffi): encode only
        return None


def _compiled() -> tuple[ReadSingle, Callable[..., bytes | None], bool] | None:
    """The C read_single and send_one, and whether send_one sends by itself; None where they
    were not built or are not wanted."""
    if os.environ.get("SWSSD_NO_SPEEDUPS"):
        return None
    try:
        from ._speedups import init, init_send, send_one
        from ._speedups import read_single as c_read_single
    except ImportError:  # installed without a C compiler
        return None
    init(KeyOpFieldsValues, SET_COMMAND, DEL_COMMAND)
    address = _zmq_send_address()
    if address:
        init_send(address)
    return c_read_single, send_one, bool(address)


_c = _compiled()
#: whether the C functions are in use
COMPILED = _c is not None
#: read_single(data, head): the change of a one-change message, or None (one_change.read_single)
read_single: ReadSingle = _c[0] if _c is not None else python_read_single


def direct_address(sock: zmq.Socket[bytes]) -> int:
    """What a sender is given for `sock`: its libzmq address when the C sender can use it, else 0."""
    return int(sock.underlying) if _c is not None and _c[2] else 0


def one_change_sender(head: bytes) -> Send:
    """send(socket, key, fvs) for the table whose header() is `head`: the one-change message of
    (key, fvs) handed to the socket at `socket` (direct_address(); 0: none) with ZMQ_DONTWAIT,
    then None; else (no socket, no C, the queue full, an error) the message, for the caller to
    send. Raises what OneChangeEncoder.encode raises."""
    encode = OneChangeEncoder(head).encode
    if _c is None:

        def send(socket: int, key: str, fvs: FieldPairs) -> bytes:
            return encode(key, fvs)

        return send
    sender: Send = partial(_c[1], head, encode)
    return sender
