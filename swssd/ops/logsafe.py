"""Log values made safe to print: long ones cut, and for the console control characters escaped.

Keys, values and field lists come from Redis, so from anyone who can write it: a 1 MB key or a
100k-field entry must not become a 1 MB log line, and in the console format a key holding a
newline or an escape sequence must not forge a log line or drive the terminal. The JSON format
escapes control characters itself (json.dumps). Only log lines are cut: the capture writes its
records whole.
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from typing import Any

#: Characters of a string value kept in a log line.
MAX_CHARS = 256
#: Characters of the message (`event`) kept: messages are written by us, values are not.
MAX_EVENT_CHARS = 1024
#: Items of a list, tuple, set or dict value kept.
MAX_ITEMS = 32
#: Nested containers are cut down to this depth; deeper ones are shown by their size.
_MAX_DEPTH = 3
#: Lines of a traceback kept from its start and from its end (an exception's message may hold a
#: key, and so any number of lines); each line is cut to MAX_EVENT_CHARS.
_TRACEBACK_LINES = 100

#: C0 controls, DEL, C1 controls, and the Unicode line and paragraph separators.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: Keys whose values we produce, or that the renderer formats itself (tracebacks).
_OURS = frozenset({"timestamp", "level", "exc_info", "exception", "stack"})


def escape_controls(text: str, keep_newlines: bool = False) -> str:
    """`text` with each control character written as its escape (\\n, \\x1b, \\x85, \\u2028)."""

    def one(m: re.Match[str]) -> str:
        ch = m.group()
        if keep_newlines and ch == "\n":
            return ch
        return _NAMED.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")

    return _CONTROL.sub(one, text)


def truncated(value: Any, max_chars: int = MAX_CHARS, depth: int = 0) -> Any:
    """`value` cut for a log line: a long string to `max_chars` + "…(N more)", a big container to
    MAX_ITEMS items + a "…(N more)" item, strings inside containers cut as well."""
    if isinstance(value, str | bytes):
        more = len(value) - max_chars
        if more <= 0:
            return value
        if isinstance(value, bytes):
            return value[:max_chars] + f"…({more} more)".encode()
        return f"{value[:max_chars]}…({more} more)"
    if isinstance(value, list | tuple | set | frozenset | dict):
        if depth >= _MAX_DEPTH:
            return f"<{type(value).__name__} of {len(value)}>"
        more = len(value) - MAX_ITEMS
        if isinstance(value, dict):
            items = list(value.items())[:MAX_ITEMS]
            cut: Any = {truncated(k, max_chars, depth + 1): truncated(v, max_chars, depth + 1) for k, v in items}
            if more > 0:
                cut["…"] = f"({more} more)"
            return cut
        kept = [truncated(v, max_chars, depth + 1) for v in list(value)[:MAX_ITEMS]]
        if more > 0:
            kept.append(f"…({more} more)")
        return kept if isinstance(value, list | set | frozenset) else tuple(kept)
    return value


def truncated_traceback(text: str) -> str:
    """A traceback cut for a log line: each line to MAX_EVENT_CHARS, its middle lines dropped
    when it has more than twice _TRACEBACK_LINES."""
    lines = [truncated(line, MAX_EVENT_CHARS) for line in text.split("\n")]
    more = len(lines) - 2 * _TRACEBACK_LINES
    if more > 0:
        lines[_TRACEBACK_LINES:-_TRACEBACK_LINES] = [f"…({more} more lines)"]
    return "\n".join(lines)


def truncate_values(_logger: Any, _name: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: every value (and key) of the event cut to what a log line holds."""
    out: dict[str, Any] = {}
    for key, value in event_dict.items():
        key = truncated(key) if isinstance(key, str) else key
        if key in ("exception", "stack") and isinstance(value, str):
            out[key] = truncated_traceback(value)
        elif key in _OURS:
            out[key] = value
        else:
            out[key] = truncated(value, MAX_EVENT_CHARS if key == "event" else MAX_CHARS)
    return out


class _Shown:
    """A value the console renderer prints as given: its repr is the escaped text."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


def escape_for_console(_logger: Any, _name: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor, before ConsoleRenderer: no control character reaches the terminal.
    A string with one is shown as its repr (quoted, escaped), as the renderer shows one with a
    newline; other values by their repr, escaped; tracebacks keep their line breaks, indented."""
    out: dict[str, Any] = {}
    for key, value in event_dict.items():
        key = escape_controls(key) if isinstance(key, str) else key
        if key in ("exception", "stack") and isinstance(value, str):
            # Indented: a line of a traceback (an exception's message too) never starts where a
            # log line does, so a newline in a message cannot pass for the next record.
            out[key] = "\n".join(f"  {line}" for line in escape_controls(value, keep_newlines=True).split("\n"))
        elif key in _OURS:
            out[key] = value
        elif key in ("event", "logger", "logger_name"):  # printed with str(), unquoted
            out[key] = escape_controls(value if isinstance(value, str) else str(value))
        elif isinstance(value, str):
            out[key] = _Shown(repr(value)) if _CONTROL.search(value) else value
        elif isinstance(value, bool | int | float) or value is None:
            out[key] = value
        else:
            out[key] = _Shown(escape_controls(repr(value)))
    return out
