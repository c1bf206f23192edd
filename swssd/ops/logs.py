"""Log setup with structlog: JSON lines (one event per line, for journald) or a readable console form.

Output goes to stderr or to a file that `reopen()` reopens by name (SIGHUP after logrotate); the
file is created 0600 in a 0700 directory and a symbolic link at its path is refused (files.py).
Standard-library log records (asyncio, redis) go through the same renderer. When stderr is the
journal (systemd sets $JOURNAL_STREAM to its device:inode), every line starts with its syslog
priority, `<3>` ... `<7>`, as sd-daemon(3) describes, so `journalctl -p warning` filters by level.
"""

from __future__ import annotations

import io
import logging
import os
import sys
import threading
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import IO, Any

import structlog

from .files import open_append
from .logsafe import escape_for_console, truncate_values

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}

#: syslog priority of each level name structlog and the standard library use (sd-daemon(3)).
PRIORITIES = {"debug": 7, "info": 6, "warning": 4, "warn": 4, "error": 3, "exception": 3, "critical": 2}

Renderer = Callable[[Any, str, MutableMapping[str, Any]], Any]


def stderr_is_journal() -> bool:
    """Whether stderr is the journal's stream ($JOURNAL_STREAM names its device:inode), not a
    redirection a child inherited the variable through."""
    dev, sep, ino = os.environ.get("JOURNAL_STREAM", "").partition(":")
    if not sep:
        return False
    try:
        st = os.fstat(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (str(st.st_dev), str(st.st_ino)) == (dev, ino)


def journal_prefixed(renderer: Renderer) -> Renderer:
    """`renderer` with each output line led by `<priority>`: a traceback's lines keep its level."""

    def render(logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> str:
        priority = PRIORITIES.get(str(event_dict.get("level", method_name)).lower(), 6)
        text = str(renderer(logger, method_name, event_dict))
        return "\n".join(f"<{priority}>{line}" for line in text.split("\n"))

    return render


class _Output:
    """stderr, or a file reopened by name on reopen(); writes are whole lines. Opening raises
    OSError (UnsafeFileError for a symlink); a failed reopen keeps the file open before."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._file: IO[str] | None = self._open()

    def _open(self) -> IO[str] | None:
        """The log file; None for stderr, which is looked up at each write, so that a stderr
        replaced later (a test runner's capture, closed when it ends) is followed, not kept."""
        if self.path is None:
            return None
        # backslashreplace: a key or value that is not UTF-8 (surrogate-escaped bytes) is written
        # escaped, as on stderr; a strict encoder would raise inside the log call and stop the daemon.
        return io.TextIOWrapper(
            io.BufferedWriter(open_append(self.path)), encoding="utf-8", errors="backslashreplace", line_buffering=True
        )

    @property
    def _stream(self) -> IO[str]:
        return self._file if self._file is not None else sys.stderr

    def write(self, text: str) -> None:
        with self._lock:
            self._stream.write(text)

    def flush(self) -> None:
        with self._lock:
            self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def reopen(self) -> None:
        if self.path is None:
            return
        with self._lock:
            old, self._file = self._file, self._open()
            if old is not None:
                old.close()


_output: _Output | None = None


def configure(format: str = "console", level: str = "info", file: Path | None = None) -> None:
    """Set up structlog (and stdlib logging) for the whole process. A log file that cannot be
    opened raises OSError and leaves the logging as it was."""
    global _output
    output = _Output(file)
    if _output is not None and _output._file is not None:
        _output._file.close()
    _output = output
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Renderer
    # Tracebacks as text in both formats, so the console's can be escaped too; then every value
    # cut to a log line's size (and, for the console, its control characters escaped).
    shared_tail: list[Any] = [structlog.processors.format_exc_info, truncate_values]
    if format == "json":
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=_output.isatty())
        shared_tail.append(escape_for_console)
    if file is None and stderr_is_journal():
        renderer = journal_prefixed(renderer)
    structlog.configure(
        processors=[*shared, structlog.processors.StackInfoRenderer(), *shared_tail, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS[level]),
        logger_factory=structlog.WriteLoggerFactory(file=_output),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(_output)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *shared_tail, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(max(LEVELS[level], logging.INFO))


def reopen() -> None:
    """Reopen the log file by name (no-op when logging to stderr); OSError when it cannot be
    opened, and lines go on to the file open before."""
    if _output is not None:
        _output.reopen()
