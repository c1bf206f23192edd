"""The ZMQ channel's message format, byte for byte as sonic-swss-common's BinarySerializer.

A message is a count followed by that many (key, value) pairs, each string preceded by its length:

    count | len db | db | len table | table                       the first pair
          | len key | key | len n | n (the number of fields, decimal text)
          | len field | field | len value | value  ... n times   then one such group per change

Counts and lengths are the C++ size_t written in native byte order: 8 bytes little-endian on the
x86_64 and arm64 machines SONiC runs the ZMQ channel between. A change with no fields is a DEL,
any other a SET (the op itself is not sent). C++ refuses to send a message of MAX_MESSAGE_SIZE
bytes or more, and its server's receive buffer holds less than that.

Text is UTF-8; bytes that are not valid UTF-8 survive as surrogate escapes (the Redis clients'
convention in swssd), so any byte string C++ sends reads back and re-serializes unchanged.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import Any, NoReturn, TypeAlias

from ...errors import SwssdError
from ...fields import DEL_COMMAND, SET_COMMAND, KeyOpFieldsValues

#: sizeof(size_t) on the platforms SONiC runs ZMQ on; counts and lengths are this wide.
SIZE_T = 8
#: MQ_RESPONSE_MAX_COUNT (zmqserver.h): the send and receive buffer size. C++ sendMsg throws for a
#: serialized message of this many bytes or more; its server cannot receive one either.
MAX_MESSAGE_SIZE = 16 * 1024 * 1024

_SIZE = struct.Struct("<Q")
_pack = _SIZE.pack
_unpack_from = _SIZE.unpack_from
_ENCODING = "utf-8"
_ERRORS = "surrogateescape"


class ZmqMessageError(SwssdError, ValueError):
    """A ZMQ channel message that cannot be sent or read."""


class MalformedMessageError(ZmqMessageError):
    """Bytes that are not a BinarySerializer message: truncated, a length past the end, a bad
    field count, bytes left over. Reading never goes past the end of the message."""


class MessageTooLargeError(ZmqMessageError):
    """A message of MAX_MESSAGE_SIZE bytes or more, which the C++ library can neither send nor
    receive."""


def _encode(text: str) -> bytes:
    return text.encode(_ENCODING, _ERRORS)


def serialize(db_name: str, table_name: str, changes: Iterable[KeyOpFieldsValues | Sequence[Any]]) -> bytes:
    """The message BinarySerializer::serializeBuffer writes for these changes.

    Each change is (key, op, fvs); only the key and the fields travel (no fields: a DEL).
    Raises MessageTooLargeError when the result would be MAX_MESSAGE_SIZE bytes or more.
    """
    return serialize_with(header(db_name, table_name), changes)


def header(db_name: str, table_name: str) -> bytes:
    """The (db, table) pair that starts every message of a table (for serialize_with)."""
    db = _encode(db_name)
    table = _encode(table_name)
    return _pack(len(db)) + db + _pack(len(table)) + table


def serialize_with(head: bytes, changes: Iterable[KeyOpFieldsValues | Sequence[Any]]) -> bytes:
    """serialize() with the (db, table) pair already encoded by header()."""
    changes = changes if isinstance(changes, (list, tuple)) else list(changes)
    try:
        parts = _parts(changes, str.encode)
    except UnicodeEncodeError:  # surrogate escapes: bytes that were not UTF-8
        parts = _parts(changes, _encode)
    pairs = len(changes) + 1
    for change in changes:
        pairs += len(change[2])
    parts[0] = _pack(pairs)
    parts[1] = head
    data = b"".join(parts)
    if len(data) >= MAX_MESSAGE_SIZE:
        _too_large(len(data))
    return data


def _too_large(size: int) -> NoReturn:
    raise MessageTooLargeError(
        f"message of {size} bytes; the C++ library sends and receives less than "
        f"{MAX_MESSAGE_SIZE} (MQ_RESPONSE_MAX_COUNT): send fewer changes at once"
    )


def _parts(changes: Sequence[KeyOpFieldsValues | Sequence[Any]], encode: Callable[[str], bytes]) -> list[bytes]:
    """The length-prefixed strings of the changes, after two slots for the count and header."""
    pack = _pack
    counts = _COUNT_PAIRS
    parts = [b"", b""]
    append = parts.append
    for change in changes:
        key = encode(change[0])
        fvs = change[2]
        append(pack(len(key)))
        append(key)
        n = len(fvs)
        append(counts[n] if n < 1024 else _string(str(n).encode()))
        for field, value in fvs:
            f = encode(field)
            v = encode(value)
            append(pack(len(f)))
            append(f)
            append(pack(len(v)))
            append(v)
    return parts


def _string(data: bytes) -> bytes:
    return _pack(len(data)) + data


#: a field count as its length-prefixed decimal text, for the counts of most changes
_COUNT_PAIRS = [_string(str(n).encode()) for n in range(1024)]


def read_header(data: bytes) -> tuple[str, str]:
    """The (db name, table name) of a message, for routing it before reading the rest."""
    size = len(data)
    if size < SIZE_T:
        raise MalformedMessageError(f"truncated: {size} bytes, less than the pair count")
    if _unpack_from(data, 0)[0] == 0:
        raise MalformedMessageError("no (db, table) pair: the pair count is 0")
    pos = SIZE_T
    names = []
    for what in ("db name", "table name"):
        if pos + SIZE_T > size:
            raise MalformedMessageError(f"truncated: the length of the {what} is missing at byte {pos}")
        n = _unpack_from(data, pos)[0]
        pos += SIZE_T
        if n > size - pos:
            raise MalformedMessageError(f"the {what} is {n} bytes at byte {pos}, past the end ({size} bytes)")
        names.append(data[pos:pos + n].decode(_ENCODING, _ERRORS))
        pos += n
    return names[0], names[1]


def deserialize(data: bytes) -> tuple[str, str, list[KeyOpFieldsValues]]:
    """(db name, table name, changes) of a message, as BinarySerializer::deserializeBuffer reads it.

    Stricter than C++ where C++ reads past the end, throws from its receive thread or silently
    drops: raises MalformedMessageError for fewer bytes than a length says, a pair count that
    does not match the message, a field count that is not decimal digits, a change whose fields
    are cut off, bytes after the last pair; MessageTooLargeError for MAX_MESSAGE_SIZE bytes or more.
    """
    global _shape_pause
    if not isinstance(data, bytes):
        data = bytes(data)
    size = len(data)
    if _shape_pause:
        _shape_pause -= 1
    else:
        shape = _shapes.get(size)
        if shape is not None and data.isascii():
            known = _read_known(data, shape)
            _judge_shapes(known is not None)
            if known is not None:
                return known
        else:
            _judge_shapes(False)
    if size >= MAX_MESSAGE_SIZE:
        raise MessageTooLargeError(
            f"message of {size} bytes; the C++ library receives less than {MAX_MESSAGE_SIZE} (MQ_RESPONSE_MAX_COUNT)"
        )
    if size < SIZE_T:
        raise MalformedMessageError(f"truncated: {size} bytes, less than the pair count")
    count = _unpack_from(data, 0)[0]
    if count == 0:
        raise MalformedMessageError("no (db, table) pair: the pair count is 0")
    if count > (size - SIZE_T) // (2 * SIZE_T):
        raise MalformedMessageError(
            f"pair count {count} needs at least {SIZE_T + 2 * SIZE_T * count} bytes, the message has {size}"
        )
    try:
        db, table, changes, end = _read(data, count) if size < _LARGE else _read_large(data, count)
    except (struct.error, OverflowError, _Cut):
        end = -1
    if size >= _LARGE and end == size:
        return db, table, changes  # decoded as UTF-8 already
    if end != size:
        _split(data, size, count * 2)  # says precisely what is wrong
        raise MalformedMessageError("inconsistent message")  # not reached: _split raised
    if not data.isascii():
        if not data[SIZE_T:].isascii():
            return _redecode(db), _redecode(table), [_redecode_change(c) for c in changes]
    elif count <= _SHAPE_PAIRS and size <= _SHAPE_BYTES and not _shape_pause and size not in _shapes:
        if len(_shapes) >= _SHAPES:
            _shapes.clear()
        _shapes[size] = _shape_of(data, count)
    return db, table, changes


#: tails kept at most (then forgotten all at once), and the longest tail worth keeping (the
#: producer's kept encodings, encoder.py, use the same bounds)
_TAILS = 2048
_TAIL_BYTES = 1024


# -- messages of a known shape ------------------------------------------------------------------
#
# A producer's messages mostly repeat a few layouts (one route: the same field names, keys and
# values of a few lengths). A message's layout is the sequence of its lengths; knowing it, one
# struct call reads every length and one itemgetter call cuts every string. The layout of the
# last ASCII message of each size is kept: a message of that size is read with it when all its
# lengths (the pair count included) are the same and its field counts have the same text, which
# is exactly when reading it length by length would find the same strings at the same places.

#: at most this many layouts are kept (then forgotten all at once)
_SHAPES = 1024
#: only messages of at most this many pairs and bytes are worth a layout (a large message is
#: read in time proportional to its bytes either way)
_SHAPE_PAIRS = 32
_SHAPE_BYTES = 4096
#: A kept layout is never replaced by another of its size (values whose lengths vary would
#: replace it on every message: building a layout costs four readings). The layouts are judged
#: every _SHAPE_JUDGE messages: when fewer than a third were read with one, they are forgotten
#: and neither looked up nor kept for the next _SHAPE_PAUSE messages.
_SHAPE_JUDGE = 512
_SHAPE_PAUSE = 16384
_shape_tries = _shape_hits = _shape_pause = 0


def _judge_shapes(hit: bool) -> None:
    global _shape_tries, _shape_hits, _shape_pause
    _shape_tries += 1
    _shape_hits += hit
    if _shape_tries >= _SHAPE_JUDGE:
        if _shape_hits * 3 < _shape_tries:
            _shape_pause = _SHAPE_PAUSE
            _shapes.clear()
        _shape_tries = _shape_hits = 0

_Shape: TypeAlias = tuple[
    Callable[[bytes], tuple[Any, ...]],  # lengths reader
    tuple[int, ...],  # lengths
    Callable[[str], tuple[str, ...]],  # strings getter
    tuple[tuple[int, str, int], ...],  # (key index, count text, fields) of each change
]
_shapes: dict[int, _Shape] = {}


def _shape_of(data: bytes, count: int) -> _Shape:
    """The layout of a valid message."""
    fmt = ["<Q"]
    lengths = [count]
    spans = []
    pos = SIZE_T
    for _ in range(2 * count):
        n = _unpack_from(data, pos)[0]
        fmt.append(f"Q{n}x" if n else "Q")
        lengths.append(n)
        spans.append(slice(pos + SIZE_T, pos + SIZE_T + n))
        pos += SIZE_T + n
    text = data.decode("ascii")
    plan = []
    i = 2
    while i < len(spans):
        counted = text[spans[i + 1]]
        fields = int(counted)
        plan.append((i, counted, fields))
        i += 2 + 2 * fields
    return (struct.Struct("".join(fmt)).unpack_from, tuple(lengths), itemgetter(*spans), tuple(plan))


def _read_known(data: bytes, shape: _Shape) -> tuple[str, str, list[KeyOpFieldsValues]] | None:
    """The message read with a known layout (an ASCII message of the layout's size), or None
    when its lengths or field counts differ from the layout's."""
    lengths_of, lengths, strings_of, plan = shape
    if lengths_of(data) != lengths:
        return None
    strings = strings_of(data.decode("ascii"))
    new = tuple.__new__
    out: list[KeyOpFieldsValues] = []
    for i, counted, fields in plan:
        if strings[i + 1] != counted:
            return None
        if fields:
            end = i + 2 + 2 * fields
            fvs = list(zip(strings[i + 2:end:2], strings[i + 3:end:2]))
            out.append(new(KeyOpFieldsValues, (strings[i], SET_COMMAND, fvs)))
        else:
            out.append(new(KeyOpFieldsValues, (strings[i], DEL_COMMAND, [])))
    return strings[0], strings[1], out


class _Cut(Exception):
    """A change announced more fields than there are pairs (or a bad count): re-checked by _split."""


def _count_of(text: str) -> int:
    """The field count of a change, strictly decimal digits without leading zeros."""
    n = _COUNT_VALUES.get(text)
    if n is not None:
        return n
    if not (text.isascii() and text.isdigit()) or text[0] == "0":
        raise MalformedMessageError(f"field count {text[:40]!r} is not a decimal number")
    return int(text)


_COUNT_VALUES = {str(n): n for n in range(1024)}


#: the (db, table) pair of the last message read, as bytes, and its two names (as read from the
#: latin-1 text: deserialize() re-decodes names that are not ASCII)
_last_head: tuple[bytes, str, str] = (bytes(2 * SIZE_T), "", "")  # ("", ""): right as it stands


#: (length and name as latin-1 text, the name) of the fields of the last change read, in order:
#: a table's changes mostly name the same fields, so a field is recognised with one comparison
#: and its name shared, not sliced again (as the changes of one message share nothing else)
_names: list[tuple[str, str]] = []
_NAMES = 64
_NAME_BYTES = 64


def _read(data: bytes, count: int) -> tuple[str, str, list[KeyOpFieldsValues], int]:
    """The message read in one pass, optimistically: a length past the end surfaces as
    struct.error (a length that cannot be read) or as an end position other than the message's
    size, and deserialize() then re-checks it precisely. Strings are sliced out of the message
    decoded 1:1 (latin-1), exact for ASCII; deserialize() re-decodes the rest as UTF-8."""
    text = data.decode("latin-1")
    startswith = text.startswith
    names = _names
    unpack_from = _unpack_from
    new = tuple.__new__
    kind = KeyOpFieldsValues
    counts = _COUNT_VALUES
    out: list[KeyOpFieldsValues] = []
    append = out.append
    global _last_head
    head, db, table = _last_head
    if data.startswith(head, SIZE_T):  # the same table as the last message: most of the time
        pos = SIZE_T + len(head)
    else:
        pos = SIZE_T
        n = unpack_from(data, pos)[0]
        pos += SIZE_T
        db = text[pos:pos + n]
        pos += n
        n = unpack_from(data, pos)[0]
        pos += SIZE_T
        table = text[pos:pos + n]
        pos += n
        if pos <= len(data):
            _last_head = (data[SIZE_T:pos], db, table)
    left = count - 1
    while left > 0:
        n = unpack_from(data, pos)[0]
        pos += SIZE_T
        key = text[pos:pos + n]
        pos += n
        n = unpack_from(data, pos)[0]
        pos += SIZE_T
        fields = counts.get(text[pos:pos + n])
        if fields is None:
            try:
                fields = _count_of(text[pos:pos + n])
            except MalformedMessageError:
                raise _Cut from None  # maybe a slice past the end: let _split tell
        pos += n
        left -= 1 + fields
        if left < 0:
            raise _Cut
        if fields:
            fvs: list[tuple[str, str]] = []
            add = fvs.append
            known = len(names)
            for i in range(fields):
                if i < known:
                    prefix, field = names[i]
                    if startswith(prefix, pos):  # the field (and its length) of the last change
                        pos += len(prefix)
                        n = unpack_from(data, pos)[0]
                        pos += SIZE_T
                        add((field, text[pos:pos + n]))
                        pos += n
                        continue
                n = unpack_from(data, pos)[0]
                end = pos + SIZE_T + n
                field = text[pos + SIZE_T:end]
                if n <= _NAME_BYTES and end <= len(text):
                    if i < known:
                        names[i] = (text[pos:end], field)
                    elif i < _NAMES:
                        names.append((text[pos:end], field))
                        known += 1
                pos = end
                n = unpack_from(data, pos)[0]
                pos += SIZE_T
                add((field, text[pos:pos + n]))
                pos += n
            append(new(kind, (key, SET_COMMAND, fvs)))
        else:
            append(new(kind, (key, DEL_COMMAND, [])))
    return db, table, out, pos


#: messages this large are read string by string, each decoded from the message's buffer once
#: (no decoding of the whole message first, no copy of a value's bytes): a 1 MB value costs one
#: copy, not three, and the event loop is held that much less
_LARGE = 64 * 1024


def _read_large(data: bytes, count: int) -> tuple[str, str, list[KeyOpFieldsValues], int]:
    """_read() for large messages (any text): a length past the end raises _Cut."""
    view = memoryview(data)
    size = len(data)
    pos = SIZE_T

    def string() -> str:
        nonlocal pos
        n = _unpack_from(data, pos)[0]
        start = pos + SIZE_T
        pos = start + n
        if pos > size:
            raise _Cut
        return str(view[start:pos], _ENCODING, _ERRORS)

    db = string()
    table = string()
    out: list[KeyOpFieldsValues] = []
    left = count - 1
    while left > 0:
        key = string()
        try:
            fields = _count_of(string())
        except MalformedMessageError:
            raise _Cut from None
        left -= 1 + fields
        if left < 0:
            raise _Cut
        fvs = [(string(), string()) for _ in range(fields)]
        out.append(tuple.__new__(KeyOpFieldsValues, (key, SET_COMMAND if fields else DEL_COMMAND, fvs)))
    view.release()
    return db, table, out, pos


def _redecode(text: str) -> str:
    """A string sliced from the latin-1 decoding, read as UTF-8 instead."""
    return text if text.isascii() else text.encode("latin-1").decode(_ENCODING, _ERRORS)


def _redecode_change(change: KeyOpFieldsValues) -> KeyOpFieldsValues:
    key, op, fvs = change
    return tuple.__new__(
        KeyOpFieldsValues, (_redecode(key), op, [(_redecode(f), _redecode(v)) for f, v in fvs])
    )


def _split(data: bytes, size: int, n: int) -> None:
    """Walk the n length-prefixed strings after the count and raise for the first problem."""
    unpack_from = _unpack_from
    pos = SIZE_T
    last = size - SIZE_T  # a length starting after this runs past the end
    strings = []
    for i in range(n):
        if pos > last:
            raise MalformedMessageError(f"truncated: string {i + 1} of {n} has no length (byte {pos} of {size})")
        end = pos + SIZE_T + unpack_from(data, pos)[0]
        if end > size:
            raise MalformedMessageError(
                f"string {i + 1} of {n} is {end - pos - SIZE_T} bytes at byte {pos + SIZE_T}, "
                f"past the end ({size} bytes)"
            )
        strings.append(data[pos + SIZE_T:end])
        pos = end
    if pos != size:
        raise MalformedMessageError(f"{size - pos} bytes after the last of {n // 2} pairs")
    # Every length is inside: the grouping into changes is what is wrong.
    i, total = 2, len(strings)
    while i < total:
        key = strings[i].decode(_ENCODING, _ERRORS)
        fields = _count_of(strings[i + 1].decode(_ENCODING, _ERRORS))
        i += 2
        if i + 2 * fields > total:
            raise MalformedMessageError(
                f"key {key[:100]!r}: {fields} fields announced, {(total - i) // 2} pairs left in the message"
            )
        i += 2 * fields
