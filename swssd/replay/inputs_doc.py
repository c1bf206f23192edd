"""Input rules shared by the command line (which must not import PySpark) and the reader."""

from __future__ import annotations

import argparse

DEFAULT_HOST_PATTERN = r"([^/]+)/[^/]+$"

HOST_RULE = (
    "regular expression whose first group, found in a file's path, names the host of events "
    "that carry none (swss.rec lines, JSON records without 'host') in a directory without "
    "the _swssd_host file swssd's daemon writes beside its swss.rec (the host its JSON records "
    "name); default: the parent directory's name, e.g. captures/sw-leaf1/swss.rec -> sw-leaf1. "
    "--host overrides them all."
)

#: lines longer than this many bytes (without their line end) are not read (readable.py)
DEFAULT_MAX_LINE_BYTES = 16 << 20
#: the bounds --max-line-bytes accepts (Hadoop's limit, this plus 3, is a Java int)
MIN_MAX_LINE_BYTES = 64
MAX_MAX_LINE_BYTES = 1 << 30


def max_line_bytes(text: str) -> int:
    """--max-line-bytes: a number of bytes within the bounds, or a one-line argparse error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of bytes, not {text!r}") from None
    if not MIN_MAX_LINE_BYTES <= value <= MAX_MAX_LINE_BYTES:
        raise argparse.ArgumentTypeError(f"{value}: must be from {MIN_MAX_LINE_BYTES} to {MAX_MAX_LINE_BYTES}")
    return value
