"""Instants given on the command line (`--as-of`, `--since`), as UTC microseconds since the epoch."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_REC_FORM = re.compile(r"^(\d{4}-\d{2}-\d{2})\.(\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)$")


def zone(name: str) -> ZoneInfo | timezone:
    """A zone by IANA name ('UTC', 'Europe/Paris'), with a readable error."""
    if name.upper() in ("UTC", "Z"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (use an IANA name such as UTC or Europe/Paris)") from None


def parse_instant(text: str, tz_name: str = "UTC") -> int:
    """ISO 8601 (`2026-11-25T23:41:16.123456Z`, `2026-11-25 23:41:16`) or swss.rec's
    `2026-11-25.23:41:16.123456`; a time without a zone is read in `tz_name`, the same zone
    as swss.rec timestamps, so a time copied from a swss.rec line means what it says.
    """
    raw = text.strip()
    m = _REC_FORM.match(raw)
    if m:
        raw = f"{m.group(1)}T{m.group(2)}"
    try:
        dt = datetime.fromisoformat(raw)
    except ValueError:
        raise ValueError(
            f"cannot read {text!r} as an instant; use e.g. 2026-11-25T23:41:16.123456Z "
            "or 2026-11-25.23:41:16.123456"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=zone(tz_name))
    delta = dt - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(us|µs|ms|s|m|min|h)?\s*$")
_DURATION_US = {"us": 1, "µs": 1, "ms": 1_000, "s": 1_000_000, "m": 60_000_000, "min": 60_000_000,
                "h": 3_600_000_000}


def parse_duration(text: str) -> int:
    """A length of time (`--window 2s`, `500ms`, `1.5m`, `250us`; seconds without a unit) in
    microseconds, so that a window is exact to the capture's own resolution."""
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"cannot read {text!r} as a duration; use e.g. 2s, 500ms, 1m or 250us")
    return round(float(m.group(1)) * _DURATION_US[m.group(2) or "s"])
