"""Secrets kept out of the config file and the command line: a password file, a systemd credential,
an environment variable; and which files holding secrets (or code) others can read or change.

systemd passes a credential as a file only the service can read: `LoadCredential=redis-password:
/etc/swssd/redis-password` in the unit makes it `$CREDENTIALS_DIRECTORY/redis-password`, which
no other user, and no `ps` or /proc/PID/cmdline or /proc/PID/environ, shows.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: The systemd credential (`LoadCredential=redis-password:...`) holding the Redis password.
CREDENTIAL_NAME = "redis-password"
#: The environment variable holding the Redis password, for the tools and for tests.
PASSWORD_ENV = "SWSSD_REDIS_PASSWORD"
#: A password file larger than this is not a password file.
_MAX_SECRET = 4096


def read_secret(path: Path) -> str:
    """The secret a file holds: its text without the trailing newline an editor or `echo` adds.
    OSError when it cannot be read; ValueError (quoting nothing of it) when it is no password."""
    with open(path, "rb") as f:
        data = f.read(_MAX_SECRET + 1)
    if len(data) > _MAX_SECRET:
        raise ValueError(f"longer than {_MAX_SECRET} bytes: not a password file")
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    text = text.removesuffix("\n").removesuffix("\r")
    if not text:
        raise ValueError("empty")
    if "\n" in text:
        raise ValueError("more than one line")
    return text


def ambient_password() -> tuple[str, str] | None:
    """The password the environment gives, with where it came from: the systemd credential
    redis-password, else $SWSSD_REDIS_PASSWORD; None when neither is set.
    A credential that cannot be read raises OSError or ValueError, as read_secret does."""
    directory = os.environ.get("CREDENTIALS_DIRECTORY")
    if directory:
        path = Path(directory) / CREDENTIAL_NAME
        if path.exists():
            return read_secret(path), f"systemd credential {CREDENTIAL_NAME}"
    value = os.environ.get(PASSWORD_ENV)
    if value:
        return value, f"${PASSWORD_ENV}"
    return None


def exposure(path: Path, *, secret: bool) -> str | None:
    """Who besides the owner can get at a file: "readable by group/others (mode 0644)" for a file
    holding a secret, "writable by group/others (mode 0666)" for any; None when nobody can, or
    the file is gone."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None
    if mode & 0o022:
        return f"writable by {_who(mode >> 1)} (mode {mode:04o})"
    if secret and mode & 0o044:
        return f"readable by {_who(mode >> 2)} (mode {mode:04o})"
    return None


def _who(bits: int) -> str:
    """`bits` shifted so that the group's bit is 0o010 and the others' 0o001."""
    return "/".join(w for w, b in (("group", 0o010), ("others", 0o001)) if bits & b)
