"""Readers of one-change messages (every set() and delete() is one), faster than deserialize()
on the server's hot path; each returns exactly what deserialize() reads, or None for it to read
or reject.

read_one(): a message is count | db | table | key | then the field count and the fields, "the
tail". A producer often repeats few tails (a route table: a few next-hop groups), so the server
keeps the tails of valid one-change messages it read (remember_tail) with what they mean. A
message that starts with the (db, table) pair expected, has any key and then a tail kept, with
the pair count that went with that tail, is exactly that key with those fields: read_one() takes
it apart in a few C calls, decoding only the key. The changes read so share the field tuples
(immutable); each has its own list.

read_single(): any values (neighbour, port, FDB tables repeat none): one pass over an ASCII
message without the general reader's steps.
"""

from __future__ import annotations

import struct

from ...fields import DEL_COMMAND, SET_COMMAND, KeyOpFieldsValues
from .serializer import (
    _COUNT_VALUES,
    _ENCODING,
    _ERRORS,
    _LARGE,
    _TAIL_BYTES,
    _TAILS,
    MAX_MESSAGE_SIZE,
    SIZE_T,
    _unpack_from,
)

#: tail -> (the message's first 8 bytes: its pair count, op, field/value pairs)
_tails: dict[bytes, tuple[bytes, str, tuple[tuple[str, str], ...]]] = {}


def read_one(data: bytes, head: bytes) -> KeyOpFieldsValues | None:
    """The change of a one-change message of the table whose header() is `head`, when its tail
    was kept by remember_tail(); None for any other message, which deserialize() then reads or
    rejects."""
    start = SIZE_T + len(head)  # the key's length
    if not (start + SIZE_T <= len(data) < MAX_MESSAGE_SIZE and data.startswith(head, SIZE_T)):
        return None
    key_start = start + SIZE_T
    key_end = key_start + _unpack_from(data, start)[0]
    if len(data) - key_end > _TAIL_BYTES:
        return None  # never kept: not worth copying and hashing (a 1 MB value costs a millisecond)
    known = _tails.get(data[key_end:])  # empty (never kept) when the key runs past the end
    if known is None or not data.startswith(known[0]):
        return None
    return tuple.__new__(
        KeyOpFieldsValues, (data[key_start:key_end].decode(_ENCODING, _ERRORS), known[1], list(known[2]))
    )


def read_single(data: bytes, head: bytes) -> KeyOpFieldsValues | None:
    """The change of a one-change ASCII message of the table whose header() is `head`, read in
    one pass without the general reader's steps (any values, seen before or not); None for any
    other message, which deserialize() then reads or rejects."""
    size = len(data)
    start = SIZE_T + len(head)
    if not (start + SIZE_T <= size < _LARGE and data.startswith(head, SIZE_T) and data.isascii()):
        return None
    text = data.decode("latin-1")
    unpack_from = _unpack_from
    try:
        n = unpack_from(data, start)[0]
        pos = start + SIZE_T
        key = text[pos:pos + n]
        pos += n
        n = unpack_from(data, pos)[0]
        pos += SIZE_T
        fields = _COUNT_VALUES.get(text[pos:pos + n])
        pos += n
        if fields is None or unpack_from(data, 0)[0] != fields + 2:
            return None
        fvs: list[tuple[str, str]] = []
        add = fvs.append
        for _ in range(fields):
            n = unpack_from(data, pos)[0]
            pos += SIZE_T
            field = text[pos:pos + n]
            pos += n
            n = unpack_from(data, pos)[0]
            pos += SIZE_T
            add((field, text[pos:pos + n]))
            pos += n
    except (struct.error, OverflowError):
        return None  # a length past the end
    if pos != size:
        return None
    return tuple.__new__(KeyOpFieldsValues, (key, SET_COMMAND if fields else DEL_COMMAND, fvs))


def remember_tail(data: bytes, change: KeyOpFieldsValues) -> None:
    """Keep the tail of `data`, a one-change message deserialize() read as `change`, for
    read_one(). Only for that: any other message would teach read_one() wrong changes."""
    unpack_from = _unpack_from
    pos = 2 * SIZE_T + unpack_from(data, SIZE_T)[0]  # past the db name
    pos += SIZE_T + unpack_from(data, pos)[0]  # the table name
    pos += SIZE_T + unpack_from(data, pos)[0]  # the key
    if len(data) - pos > _TAIL_BYTES:
        return
    if len(_tails) >= _TAILS:
        _tails.clear()
    _tails[data[pos:]] = (data[:SIZE_T], change[1], tuple(change[2]))
