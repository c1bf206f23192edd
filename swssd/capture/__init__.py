"""Capture files: every task swssd consumes, as JSON Lines (lossless) and optionally as swss.rec.

Layer rule: imports only the base modules and `swssd.ops`.
"""

from .format import KINDS, CapturedTask, CaptureKind, iso_ts, jsonl_line, rec_line, rec_started_line
from .writer import HOST_FILE_NAME, REC_FILE_NAME, CaptureWriter

__all__ = [
    "HOST_FILE_NAME",
    "KINDS",
    "REC_FILE_NAME",
    "CaptureKind",
    "CaptureWriter",
    "CapturedTask",
    "iso_ts",
    "jsonl_line",
    "rec_line",
    "rec_started_line",
]
