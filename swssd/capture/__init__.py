"""Capture files: every task swssd consumes, as JSON Lines (lossless) and optionally as swss.rec."""

from .format import CapturedTask, iso_ts, jsonl_line, rec_line, rec_started_line
from .writer import REC_FILE_NAME, CaptureWriter

__all__ = [
    "REC_FILE_NAME",
    "CaptureWriter",
    "CapturedTask",
    "iso_ts",
    "jsonl_line",
    "rec_line",
    "rec_started_line",
]
