"""A Spark master that cannot be reached or refuses the application, and spark-submit's logging.

Each replay runs as a user runs it, in a process of its own: exit 2 and one line naming the master,
no traceback, in bounded time."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from swssd.replay.master import driver_warning, standalone_addresses, unreachable
from swssd.replay.session import session_settings

FIXTURE = Path(__file__).parent / "fixtures" / "swss_rec" / "sw-leaf1" / "swss.rec"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _replay(*args: str, timeout: float, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "swssd.replay", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def test_standalone_addresses() -> None:
    assert standalone_addresses("spark://10.0.0.5:7077") == [("10.0.0.5", 7077)]
    assert standalone_addresses("spark://a:1,b:2") == [("a", 1), ("b", 2)]
    assert standalone_addresses("spark://[::1]:7077") == [("::1", 7077)]
    assert standalone_addresses("spark://master") == [("master", 7077)]
    assert standalone_addresses("local[*]") == standalone_addresses(None) == []
    assert standalone_addresses("spark://h:port") == []  # Spark's own error then


def test_unreachable_names_the_master_and_the_cause() -> None:
    port = _closed_port()
    problem = unreachable(f"spark://127.0.0.1:{port}", 2.0)
    assert problem is not None and f"spark://127.0.0.1:{port}" in problem and "refused" in problem
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        open_port = listening.getsockname()[1]
        assert unreachable(f"spark://127.0.0.1:{port},127.0.0.1:{open_port}", 2.0) is None  # a standby answers
    assert unreachable("local[2]", 2.0) is None


def test_driver_warning_only_for_a_loopback_driver_and_a_remote_master() -> None:
    warning = driver_warning("spark://192.0.2.10:7077", "127.0.0.1")
    assert warning is not None and "SPARK_LOCAL_IP" in warning and "192.0.2.10" in warning
    assert driver_warning("spark://127.0.0.1:7077", "127.0.0.1") is None
    assert driver_warning("spark://192.0.2.10:7077", "192.0.2.2") is None
    assert driver_warning("local[*]", "127.0.0.1") is None


def test_quiet_unless_verbose_also_under_spark_submit() -> None:
    assert session_settings("local[1]")["spark.log.level"] == "ERROR"
    assert "spark.log.level" not in session_settings("local[1]", verbose=True)


@pytest.mark.parametrize("command", ["stats", "state", "history", "report"])
def test_a_closed_master_port_is_one_line_and_exit_2_at_once(tmp_path: Path, command: str) -> None:
    port = _closed_port()
    extra = ["--out", str(tmp_path / "r.html")] if command == "report" else ["--output", str(tmp_path / "o")]
    started = time.monotonic()
    proc = _replay(command, str(FIXTURE), "--master", f"spark://127.0.0.1:{port}", *extra, timeout=120,
                   cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == [f"swssd replay: the Spark master spark://127.0.0.1:{port} cannot be reached "
                     f"(127.0.0.1:{port}: Connection refused)"]
    assert time.monotonic() - started < 30


@pytest.fixture
def not_a_master() -> Iterator[int]:
    """A port that accepts connections and answers nothing a Spark client understands."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.sendall(b"HTTP/1.0 400 not a spark master\r\n\r\n")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join()
    server.close()


def test_a_master_that_refuses_the_application_is_one_line_without_traceback(
        tmp_path: Path, not_a_master: int) -> None:
    """Spark gives up after its own registration retries (about a minute): the error is one line."""
    master = f"spark://127.0.0.1:{not_a_master}"
    proc = _replay("stats", str(FIXTURE), "--master", master, "--output", str(tmp_path / "o"), timeout=180,
                   cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "\tat " not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) <= 3, proc.stderr
    assert any(line.startswith(f"swssd replay: Spark error (master {master}): ") for line in lines), proc.stderr


@pytest.mark.skipif(shutil.which("spark-submit", path=os.path.dirname(sys.executable)) is None,
                    reason="PySpark's spark-submit is not beside this Python (install the replay extra)")
def test_spark_submit_logs_errors_only_and_gives_local_modes_answer(tmp_path: Path) -> None:
    submit = shutil.which("spark-submit", path=os.path.dirname(sys.executable))
    assert submit is not None
    import swssd

    source = Path(swssd.__file__).resolve().parent.parent
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(source)}
    submitted = subprocess.run(
        [submit, "--master", "local[1]", str(source / "swssd" / "replay" / "__main__.py"), "stats", str(FIXTURE),
         "--output", str(tmp_path / "submitted")],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert submitted.returncode == 0, submitted.stderr
    # spark-submit's own start-up lines come before any Python runs; after them, errors only
    spark_lines = [line for line in submitted.stderr.splitlines() if " INFO " in line]
    assert len(spark_lines) <= 5, submitted.stderr
    local = _replay("stats", str(FIXTURE), "--output", str(tmp_path / "local"), timeout=300, cwd=tmp_path)
    assert local.returncode == 0, local.stderr

    def answer(out: str, where: str) -> list[str]:
        return [line for line in out.replace(where, "OUT").splitlines() if not line.startswith("swssd replay:")]

    assert answer(submitted.stdout, str(tmp_path / "submitted")) == answer(local.stdout, str(tmp_path / "local"))
