"""Run sonic-swss-common's own Python tests (tests/test_redis_ut.py, test_signalhandler_ut.py,
test_interface.py, test_logger.py), unmodified, against swssd's compatible layer.

    python tests/swss_common_suite.py [--tree DIR | --archive FILE] [--binding ENV_SH] [-- PYTEST_ARGS]

The tests expect SONiC's setup: a redis-server on 127.0.0.1:6379 with the unix socket
/var/run/redis/redis.sock, 16 databases and notify-keyspace-events AKE. So that this touches
nothing of the machine's, the run happens in a private network and mount namespace (unshare, as
root): its own loopback, a tmpfs on /var/run/redis, its own redis-server. `swsscommon` is the
opt-in package under compat/ (the layer), or with --binding the real binding from that env file.

The tests come from a sonic-swss-common tree, or are read from its archive (by default
../shared/vendor/sonic-swss-common-*.tar.gz beside the clone); nothing is fetched. Exit status:
pytest's, or 77 with the reason on stderr when the run cannot happen here.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT.parent / "shared" / "vendor"
TESTS = ("test_redis_ut.py", "test_signalhandler_ut.py", "test_interface.py", "test_logger.py")
SKIP = 77
SOCKET_DIR = "/var/run/redis"


def skip(reason: str) -> int:
    print(f"swss_common_suite: skipped: {reason}", file=sys.stderr)
    return SKIP


def default_archive() -> Path | None:
    found = sorted(VENDOR.glob("sonic-swss-common-*.tar.gz"))
    return found[-1] if found else None


def extract_tests(archive: Path, into: Path) -> Path:
    """The archive's tests/ directory (and nothing else) under `into`; the tree's root."""
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if "/tests/" in m.name and (m.isfile() or m.isdir())]
        tar.extractall(into, members=members, filter="data")
    (top,) = [p for p in into.iterdir() if p.is_dir()]
    return top


def inside(tree: Path, env_file: str | None, pytest_args: list[str]) -> int:
    """In the namespaces: loopback up, tmpfs socket directory, redis-server, then pytest."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    os.makedirs(SOCKET_DIR, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", SOCKET_DIR], check=True)
    sys.path.insert(0, str(ROOT))
    from swssd.redis.embedded_redis import find_redis_server

    server = subprocess.Popen([
        find_redis_server(), "--port", "6379", "--bind", "127.0.0.1",
        "--unixsocket", f"{SOCKET_DIR}/redis.sock", "--unixsocketperm", "777", "--databases", "16",
        "--notify-keyspace-events", "AKE", "--save", "", "--appendonly", "no", "--loglevel", "warning",
    ], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if os.path.exists(f"{SOCKET_DIR}/redis.sock"):
                break
            time.sleep(0.05)
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *TESTS, *pytest_args]
        env = dict(os.environ, PYTHONPATH=str(ROOT / "compat") + os.pathsep + str(ROOT))
        if env_file:
            command = ["bash", "-c", 'source "$0" && exec "${PYTHON:-python3}" "$@"', env_file, *command[1:]]
            env = dict(os.environ)
        return subprocess.run(command, cwd=tree / "tests", env=env).returncode
    finally:
        server.terminate()
        server.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tree", type=Path, default=os.environ.get("SWSS_COMMON_TREE"),
                        help="a sonic-swss-common source tree")
    parser.add_argument("--archive", type=Path, help="a sonic-swss-common archive (default: ../shared/vendor)")
    parser.add_argument("--binding", help="env file of a built binding: run the tests against it instead")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args(argv)
    if args.inside:
        return inside(args.tree, args.binding, args.pytest_args)
    missing = [name for name in ("psutil", "pympler", "pytest") if importlib.util.find_spec(name) is None]
    if missing and not args.binding:
        return skip(f"the tests import {', '.join(missing)}: pip install -e '.[test]'")
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        return skip("needs root with unshare and ip, for a private redis-server on 127.0.0.1:6379")
    probe = subprocess.run(["unshare", "--net", "--mount", "--fork", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return skip(f"cannot make a private network namespace here: {probe.stderr.strip() or probe.returncode}")
    with tempfile.TemporaryDirectory(prefix="swss-common-tests-") as scratch:
        tree = args.tree
        if tree is None:
            archive = args.archive or default_archive()
            if archive is None or not archive.exists():
                return skip("runs sonic-swss-common's own Python tests, which come from its source: give a checkout "
                            f"(--tree, or $SWSS_COMMON_TREE), or put its `git archive` tarball in {VENDOR}")
            tree = extract_tests(archive, Path(scratch))
        if not all((tree / "tests" / name).exists() for name in TESTS):
            return skip(f"{tree}/tests does not hold {', '.join(TESTS)}")
        command = ["unshare", "--net", "--mount", "--fork", sys.executable, __file__, "--inside",
                   "--tree", str(tree)]
        if args.binding:
            command += ["--binding", args.binding]
        return subprocess.run([*command, "--", *args.pytest_args]).returncode


if __name__ == "__main__":
    sys.exit(main())
