"""The private redis-server must not outlive its owner, and a killed owner's temp dir is removed
at the next start, while a live one's never is. Real processes, real signals, real redis-server."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon_harness import wait_until
from swssd.redis.embedded_redis import DIR_PREFIX, OWNER_FILE, clean_stale_dirs

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux")

# Starts a private redis-server (in a thread when argv[1] == "thread"), prints its dir and pid, sleeps.
OWNER_SCRIPT = textwrap.dedent("""
    import sys, threading, time
    from swssd.redis.embedded_redis import EmbeddedRedis
    servers = []
    def start():
        servers.append(EmbeddedRedis().start())
    if sys.argv[1] == "thread":
        t = threading.Thread(target=start); t.start(); t.join()
    else:
        start()
    print(servers[0].dir, servers[0].process.pid, servers[0].port, flush=True)
    time.sleep(600)
""")


@pytest.fixture
def base() -> Iterator[Path]:
    """A short TMPDIR of its own (a unix socket path must stay under 108 bytes), so the
    cleanup under test sees only this test's dirs, not those of other runs on the machine."""
    path = Path(tempfile.mkdtemp(prefix="swt"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def env_with_tmpdir(base: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["TMPDIR"] = str(base)
    env.pop("SWSSD_DB_CONFIG", None)
    return env


def cleaned_once_released(base: Path, timeout: float = 5.0) -> list[Path]:
    """clean_stale_dirs(base), retried until it removes something: the kernel releases a dead
    process's files (and so its lock) a moment after the process is gone (deferred fput), which
    a loaded machine stretches."""
    removed: list[Path] = []
    wait_until(lambda: bool(removed.extend(clean_stale_dirs(base)) or removed), timeout)
    return removed


def running(pid: int) -> bool:
    """Alive and not a zombie (a container's init may be slow to reap the orphan)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def pids_using(path: Path) -> list[int]:
    """Running processes with the dir's owner file open: its owner and its redis-server (whose
    command line tells nothing, redis-server rewrites its process title)."""
    owner_file = str(path / OWNER_FILE)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
            if any(os.readlink(f"/proc/{entry}/fd/{fd}") == owner_file for fd in fds):
                found.append(int(entry))
        except OSError:
            pass
    return [pid for pid in found if running(pid)]


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start_owner(base: Path, how: str) -> tuple[subprocess.Popen[str], Path, int, int]:
    """The owner script as a subprocess: (process, temp dir, redis pid, redis port)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", OWNER_SCRIPT, how], stdout=subprocess.PIPE, text=True, env=env_with_tmpdir(base)
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    assert line, f"owner script exited {proc.wait()}"
    return proc, Path(line[0]), int(line[1]), int(line[2])


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def fake_dir(base: Path, name: str, owner: str | None) -> Path:
    path = base / name
    path.mkdir(mode=0o700)
    (path / "redis.sock").write_text("")
    if owner is not None:
        (path / OWNER_FILE).write_text(owner)
    return path


def test_demo_killed_with_sigkill_takes_its_redis_server_along_and_the_next_start_cleans_up(base: Path) -> None:
    log = base / "demo.log"
    cmd = [sys.executable, "-m", "swssd.cli", "demo", "--seconds", "120"]
    with open(log, "wb") as out:
        demo = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env_with_tmpdir(base))
    try:
        assert wait_until(lambda: "private redis-server on" in log.read_text() or demo.poll() is not None, 60)
        assert demo.poll() is None, log.read_text()
        [stale] = base.glob(f"{DIR_PREFIX}*")
        [redis_pid] = [pid for pid in pids_using(stale) if pid != demo.pid]
        demo.kill()
        demo.wait(10)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    assert wait_until(lambda: not running(redis_pid), 5), "redis-server outlived its SIGKILLed owner"
    assert stale.exists()  # nobody could remove it: that is for the next start

    again = subprocess.run([*cmd[:-1], "1"], capture_output=True, text=True, timeout=90, env=env_with_tmpdir(base))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "removed temp dirs of killed private redis-servers" in again.stderr
    assert not stale.exists()
    assert not list(base.glob(f"{DIR_PREFIX}*"))  # and its own dir went at its exit


def test_owner_script_killed_takes_its_redis_server_along(base: Path) -> None:
    owner, path, redis_pid, port = start_owner(base, "main")
    try:
        assert answers(port)
        owner.kill()
        owner.wait(10)
        assert wait_until(lambda: not running(redis_pid), 5)
        assert cleaned_once_released(base) == [path]
        assert not path.exists()
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()


def test_a_live_runs_dir_is_never_removed_by_another_process(base: Path) -> None:
    owner, path, redis_pid, port = start_owner(base, "main")
    try:
        other = subprocess.run(
            [sys.executable, "-c",
             "from swssd.redis.embedded_redis import clean_stale_dirs; print(clean_stale_dirs())"],
            capture_output=True, text=True, timeout=60, env=env_with_tmpdir(base), check=True,
        )
        assert other.stdout.strip() == "[]"
        assert clean_stale_dirs(base) == []
        assert path.exists() and (path / "redis.sock").exists() and answers(port)
    finally:
        owner.kill()
        owner.wait()
    assert wait_until(lambda: not running(redis_pid), 5)


def test_started_from_a_thread_the_server_survives_the_thread_and_keeps_its_dir(base: Path) -> None:
    """PR_SET_PDEATHSIG follows the forking thread: off a main thread it is not set, so the server
    outlives the thread (and a killed owner); its inherited lock then keeps the dir from cleanup."""
    owner, path, redis_pid, port = start_owner(base, "thread")
    try:
        assert answers(port)  # the starting thread has exited by now
        owner.kill()
        owner.wait(10)
        assert running(redis_pid) and answers(port)
        assert clean_stale_dirs(base) == []  # owner gone, but its redis-server holds the lock
        assert (path / "redis.sock").exists()
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        if running(redis_pid):
            os.kill(redis_pid, signal.SIGKILL)
    assert wait_until(lambda: not running(redis_pid), 5)
    assert cleaned_once_released(base) == [path]


def test_cleanup_removes_only_unlocked_dirs_of_dead_owners_named_as_ours(base: Path) -> None:
    gone = dead_pid()
    stale = fake_dir(base, f"{DIR_PREFIX}stale", f"{gone}\n")
    kept = {
        "no owner file": fake_dir(base, f"{DIR_PREFIX}new", None),
        "owner alive": fake_dir(base, f"{DIR_PREFIX}alive", f"{os.getpid()}\n"),
        "not a pid": fake_dir(base, f"{DIR_PREFIX}junk", "junk"),
        "pid 0": fake_dir(base, f"{DIR_PREFIX}zero", "0"),
        "other name": fake_dir(base, "other-redis-x", f"{gone}\n"),
        "locked": fake_dir(base, f"{DIR_PREFIX}locked", f"{gone}\n"),  # e.g. alive in another pid namespace
    }
    target = fake_dir(base, "elsewhere", f"{gone}\n")
    (base / f"{DIR_PREFIX}link").symlink_to(target)
    (base / f"{DIR_PREFIX}file").write_text(f"{gone}\n")
    lock = os.open(kept["locked"] / OWNER_FILE, os.O_RDONLY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert clean_stale_dirs(base) == [stale]
    finally:
        os.close(lock)
    assert not stale.exists()
    for why, path in kept.items():
        assert (path / "redis.sock").exists(), why
    assert (target / "redis.sock").exists() and (base / f"{DIR_PREFIX}link").is_symlink()
    assert (base / f"{DIR_PREFIX}file").exists()
    # Unlocked now, and its pid is gone: the next cleanup takes it.
    assert clean_stale_dirs(base) == [kept["locked"]]
