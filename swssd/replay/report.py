"""Readable terminal output: aligned text tables and the input summary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime


def cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, Mapping):
        return " ".join(f"{k}={v}" for k, v in sorted(value.items()))
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def text_table(headers: Sequence[str], rows: Sequence[Sequence[object]], max_width: int = 60) -> str:
    """Columns padded to their widest cell; cells longer than max_width are cut with '…'."""
    cells = [[cell(v) for v in row] for row in rows]
    cells = [[c if len(c) <= max_width else c[: max_width - 1] + "…" for c in row] for row in cells]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)


def input_summary(counts: Mapping[str, int], rejects_path: str | None) -> str:
    """One line on what was read, and where the rejected lines went."""
    text = (
        f"read {counts.get('lines', 0)} lines: {counts.get('events', 0)} events, "
        f"{counts.get('markers', 0)} 'recording started' markers, {counts.get('blank', 0)} blank, "
        f"{counts.get('rejects', 0)} rejected"
    )
    if rejects_path:
        text += f" (written to {rejects_path})"
    return text
