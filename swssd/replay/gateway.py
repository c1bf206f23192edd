"""Starting the replay's JVM first, before PySpark is even imported.

PySpark starts its JVM when the session is created: after the command has imported PySpark
(about 0.5 s) and its own modules and looked at its inputs. A replay of a small capture is
mostly that start, so `EarlyJVM.start` runs the command PySpark would run (spark-submit with the
session's settings as --conf, the same environment, a stdin pipe whose end stops the JVM, SIGINT
ignored: see pyspark.java_gateway.launch_gateway) as the command's first step, and the imports
happen while the JVM boots. `EarlyJVM.connect` then gives the running JVM to PySpark the way
spark-submit gives its JVM to a Python driver: PYSPARK_GATEWAY_PORT and PYSPARK_GATEWAY_SECRET.

The JVM's stderr reaches the user through a pipe this process reads (`relay`), line by line, except
for the lines a start prints that nobody can act on: Spark adds the incubating vector module
(`--add-modules=jdk.incubator.vector`), and Java warns `WARNING: Using incubator modules:
jdk.incubator.vector`; HotSpot says how many compiler directives it read (`3 compiler directives
added`, jit.py). Every other line (Spark's errors, a JVM's crash report, -Xlog output) is passed
on as it is.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

#: how long the JVM may take to say where its gateway listens (PySpark waits without a limit)
CONNECT_TIMEOUT = 120.0
_PORT_ENV = "PYSPARK_GATEWAY_PORT"
_SECRET_ENV = "PYSPARK_GATEWAY_SECRET"
#: lines of the JVM's stderr not passed on (see the module docstring)
KNOWN_NOISE = frozenset({b"WARNING: Using incubator modules: jdk.incubator.vector"})
#: and lines of these forms
KNOWN_NOISE_FORMS = (re.compile(rb"\d+ compiler directives added"),)


def spark_home() -> Path | None:
    """$SPARK_HOME, else the installed pyspark package's directory (found without importing it)."""
    given = os.environ.get("SPARK_HOME")
    if given:
        return Path(given)
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


class EarlyJVM:
    """spark-submit's JVM for a session, started before the session is built."""

    def __init__(self, proc: subprocess.Popen[bytes], info_dir: Path) -> None:
        self.proc = proc
        self._relay: threading.Thread | None = None
        if proc.stderr is not None:
            self._relay = threading.Thread(target=relay, args=(proc.stderr,), name="swssd-jvm-stderr", daemon=True)
            self._relay.start()
        #: a session took it (connect() said yes): its end is the session's business
        self.used = False
        self._info_dir = info_dir
        self._info = info_dir / "conn-info"

    @classmethod
    def start(cls, settings: Mapping[str, str]) -> EarlyJVM | None:
        """Launch spark-submit with `settings` (every setting the session will be built with); None
        when a JVM is there already (under spark-submit) or spark-submit cannot be found."""
        home = spark_home()
        if _PORT_ENV in os.environ or home is None or not (home / "bin" / "spark-submit").is_file():
            return None
        command = [str(home / "bin" / "spark-submit")]
        for key, value in settings.items():
            command += ["--conf", f"{key}={value}"]
        command.append("pyspark-shell")
        info_dir = Path(tempfile.mkdtemp(prefix="swssd-replay-"))
        env = dict(os.environ, SPARK_CONNECT_MODE="0", _PYSPARK_DRIVER_CONN_INFO_PATH=str(info_dir / "conn-info"))
        env.setdefault("SPARK_HOME", str(home))
        try:
            proc = subprocess.Popen(command, stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                    preexec_fn=_ignore_sigint)
        except OSError:
            shutil.rmtree(info_dir, ignore_errors=True)
            return None
        return cls(proc, info_dir)

    def _port_and_secret(self, timeout: float) -> tuple[int, str] | None:
        """What the gateway wrote (PySpark's format: port, then the secret's length and UTF-8); None
        if the JVM exited first or took longer than `timeout`."""
        deadline = time.monotonic() + timeout
        try:
            while not self._info.is_file():
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    return None
                time.sleep(0.01)
            data = self._info.read_bytes()  # the JVM writes a temporary file and renames it
            (port,) = struct.unpack_from(">i", data, 0)
            (length,) = struct.unpack_from(">i", data, 4)
            return port, data[8 : 8 + length].decode("utf-8")
        except (OSError, struct.error, UnicodeDecodeError):
            return None
        finally:
            shutil.rmtree(self._info_dir, ignore_errors=True)

    @contextlib.contextmanager
    def connect(self, timeout: float = CONNECT_TIMEOUT) -> Iterator[bool]:
        """While inside, a session PySpark builds uses this JVM (yields True); yields False, with the
        JVM stopped, when it did not come up (the caller launches one the usual way)."""
        found = self._port_and_secret(timeout)
        if found is None:
            self.stop()
            yield False
            return
        saved = {name: os.environ.get(name) for name in (_PORT_ENV, _SECRET_ENV)}
        os.environ[_PORT_ENV], os.environ[_SECRET_ENV] = str(found[0]), found[1]
        self.used = True
        try:
            yield True
        finally:
            for name, value in saved.items():  # not left for child processes
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    def stop(self) -> None:
        """End a JVM no session took: closing its stdin tells a running gateway to exit; one still
        booting (it reads stdin only once its gateway is up) is killed after a second."""
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self._info_dir, ignore_errors=True)


def relay(source: BinaryIO, fd: int = 2) -> None:
    """Copy `source` (the JVM's stderr) to `fd` line by line until it ends, leaving out
    KNOWN_NOISE and KNOWN_NOISE_FORMS. Written to the descriptor, as the JVM itself wrote there;
    a write that fails (the caller's stderr closed) drops that line, as the JVM's own write would
    have."""
    with contextlib.suppress(OSError, ValueError):
        for line in iter(source.readline, b""):
            text = line.rstrip(b"\r\n")
            if text in KNOWN_NOISE or any(form.fullmatch(text) for form in KNOWN_NOISE_FORMS):
                continue
            with contextlib.suppress(OSError):
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view):]


def _ignore_sigint() -> None:
    """Ctrl-C is the Python driver's to handle, as in PySpark's own launch."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
