"""Files the daemon writes (log, captures): private by default and never reached through a symlink.

A directory swssd creates is 0700 and a file it creates is 0600, whatever the umask lets through
(the unit's UMask=0077 says the same). A file is opened with O_NOFOLLOW, so a symbolic link
planted at its path (pointing at another file the daemon can write) is refused, not appended to,
and with O_NONBLOCK, so a FIFO there cannot hang the daemon; anything but a regular file is refused.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


class UnsafeFileError(OSError):
    """The path is a symbolic link or not a regular file; str() is one line naming the path."""

    def __str__(self) -> str:
        return f"{self.filename} {self.strerror}"


def reason(exc: OSError) -> str:
    """One line for an OSError met opening `path`: what is wrong, without a Python repr."""
    if isinstance(exc, UnsafeFileError):
        return str(exc)
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


def make_private_dir(path: Path) -> None:
    """Create `path` and its missing parents, each 0700; existing directories are left as they are."""
    missing: list[Path] = []
    p = path
    while not os.path.lexists(p) and p.parent != p:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, DIR_MODE)  # the umask can only take bits away from 0700
        except FileExistsError:  # made meanwhile by someone else: theirs
            if not d.is_dir():
                raise


def open_append(path: Path) -> io.FileIO:
    """Open `path` for appending (and reading back its last byte), creating it 0600 in a private
    directory; a symbolic link or anything but a regular file raises UnsafeFileError."""
    make_private_dir(path.parent)
    fd = _open_no_link(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeFileError(errno.EINVAL, "is not a regular file", str(path))
        os.set_blocking(fd, True)
        return io.FileIO(fd, "ab")
    except BaseException:
        os.close(fd)
        raise


def replace_private(path: Path, data: bytes) -> None:
    """Make `path` hold `data`, created 0600 in a private directory: written under a temporary
    name and renamed over it, so a reader sees the old content or the new, and a symbolic link
    planted at the path is replaced, never followed."""
    make_private_dir(path.parent)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = _open_no_link(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        with io.FileIO(fd, "wb") as f:
            view = memoryview(data)
            while view:
                view = view[f.write(view) or 0:]
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _open_no_link(path: Path, flags: int) -> int:
    """os.open with O_NOFOLLOW | O_CLOEXEC, created FILE_MODE; a symbolic link at `path` raises
    UnsafeFileError instead of being followed."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFileError(errno.ELOOP, "is a symbolic link; swssd does not follow it", str(path)) from None
        raise
