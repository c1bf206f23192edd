"""RedisCommand: one command formatted ahead of sending, as the C++ class the binding exposes.

Programs build one (bgpmon's `formatHSET`/`formatDEL`) and hand it to RedisPipeline.push or
RedisTransactioner.enqueue. The arguments are kept as a list and packed by swssd's own command
packing when sent; toPrintableString() shows the packed bytes with the C++ escaping.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..channels.config_entries import cpp_order
from ..redis.wire import pack_command


class RedisCommand:
    """RedisCommand(): empty until one of the format* calls."""

    def __init__(self) -> None:
        self.args: tuple[str, ...] = ()

    def format(self, command: str | Sequence[str]) -> None:
        """A list of arguments, or a command line split at spaces (hiredis's format without
        a % conversion: the binding passes no variadic arguments)."""
        if isinstance(command, str):
            self.args = tuple(command.split())
        else:
            self.args = tuple(str(arg) for arg in command)

    def formatArgv(self, argc: int, argv: Sequence[str], argvlen: Sequence[int] | None = None) -> None:
        """The first `argc` arguments of `argv`."""
        self.args = tuple(str(arg) for arg in argv[:argc])

    def formatHSET(self, key: str, values: str | Mapping[str, str] | Iterable[tuple[str, str]],
                   value: str | None = None) -> None:
        """HSET key field value, or HSET key f1 v1 f2 v2... from pairs or a map (a map's fields in
        byte order, as a std::map); ValueError for no pairs, as the C++ invalid_argument."""
        if isinstance(values, str):
            if value is None:
                raise TypeError("formatHSET(key, field, value) needs the value")
            self.args = ("HSET", key, values, value)
            return
        pairs = sorted(values.items(), key=lambda fv: cpp_order(fv[0])) if isinstance(values, Mapping) else list(values)
        if not pairs:
            raise ValueError("empty values")
        self.args = ("HSET", key, *(str(x) for pair in pairs for x in pair))

    def formatHGET(self, key: str, field: str) -> None:
        self.args = ("HGET", key, field)

    def formatHDEL(self, key: str, fields: str | Sequence[str]) -> None:
        """HDEL of one field or several; ValueError for an empty list."""
        if isinstance(fields, str):
            self.args = ("HDEL", key, fields)
            return
        if not fields:
            raise ValueError("empty values")
        self.args = ("HDEL", key, *fields)

    def formatEXPIRE(self, key: str, ttl: int) -> None:
        self.args = ("EXPIRE", key, str(ttl))

    def formatTTL(self, key: str) -> None:
        self.args = ("TTL", key)

    def formatDEL(self, keys: str | Sequence[str]) -> None:
        """DEL of one key or several; ValueError for an empty list."""
        if isinstance(keys, str):
            self.args = ("DEL", keys)
            return
        if not keys:
            raise ValueError("empty values")
        self.args = ("DEL", *keys)

    def toPrintableString(self) -> str:
        """The packed command with the C++ binary_to_printable escaping ("" before any format)."""
        if not self.args:
            return ""
        return printable(pack_command(self.args))


#: the escapes binary_to_printable writes for whitespace that isprint() refuses
_SPACE_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord("\v"): "\\v", ord("\f"): "\\f"}


def printable(data: bytes) -> str:
    """Bytes as the C++ binary_to_printable shows them: printable ASCII as is (a backslash
    doubled), \\n \\r \\t \\v \\f escaped, anything else as \\xHH."""
    out: list[str] = []
    for byte in data:
        if 0x20 <= byte < 0x7F:
            out.append("\\\\" if byte == 0x5C else chr(byte))
        elif byte in _SPACE_ESCAPES:
            out.append(_SPACE_ESCAPES[byte])
        else:
            out.append(f"\\x{byte:02X}")
    return "".join(out)


# hiredis's reply types, the `expectedType` that RedisPipeline.push and RedisTransactioner.enqueue take
REDIS_REPLY_STRING = 1
REDIS_REPLY_ARRAY = 2
REDIS_REPLY_INTEGER = 3
REDIS_REPLY_NIL = 4
REDIS_REPLY_STATUS = 5
REDIS_REPLY_ERROR = 6


def reply_type(reply: object) -> int:
    """The hiredis type of a reply as the hiredis reader hands it over (a status and a string both
    arrive as str: a str counts as the type the caller expects of the two)."""
    if reply is None:
        return REDIS_REPLY_NIL
    if isinstance(reply, Exception):
        return REDIS_REPLY_ERROR
    if isinstance(reply, bool | int):
        return REDIS_REPLY_INTEGER
    if isinstance(reply, list):
        return REDIS_REPLY_ARRAY
    return REDIS_REPLY_STRING


def check_reply_type(reply: object, expected: int, command: str) -> None:
    """RuntimeError with the C++ message when the reply is not of the expected type (and, for a
    status, not "OK")."""
    got = reply_type(reply)
    if got == REDIS_REPLY_STRING and expected == REDIS_REPLY_STATUS:
        if reply == "OK":
            return
        raise RuntimeError(f"Redis reply {reply} != OK, command: {command}")
    if got != expected:
        err = str(reply) if got in (REDIS_REPLY_STRING, REDIS_REPLY_ERROR) else "NON-STRING-REPLY"
        raise RuntimeError(f"Expected to get redis type {expected} got type {got}, err: {err}, command: {command}")


class RedisReply:
    """A reply handed to the program (RedisPipeline.push, RedisTransactioner.dequeueReply): the
    binding hands over an opaque redisReply pointer, never None for a reply, nil included, so
    None keeps meaning "no reply". `value` is the reply as the hiredis reader decoded it."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"RedisReply({self.value!r})"
