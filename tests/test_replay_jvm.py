"""The replay JVM's fast start (swssd/replay/jvm.py): the class archive made, used, and never a reason to fail.

Fresh `python -m swssd.replay` processes with their own cache directory, real Spark in local mode:
the first run writes the archive, the next maps it (seen in the JVM's class-loading log), and a
damaged, forged or unwritable cache gives the same results as no cache at all. Plus the
small-input Spark settings: the same outputs with and without them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from pyspark import SparkContext
from pyspark.sql import SparkSession

from fixtures.spark_session import SPARK_ARGS, spark  # noqa: F401 - spark is a fixture
from swssd.replay import jit, jvm
from swssd.replay.cli import main

RECORDS = [
    {"ts": "2026-11-25T23:41:16.123456Z", "host": "sw1", "db": "APPL_DB", "table": "PORT_TABLE",
     "key": "Ethernet0", "op": "SET", "fvs": [["mtu", "9100"], ["admin_status", "up"]], "seq": 1},
    {"ts": "2026-11-25T23:41:17.000000Z", "host": "sw1", "db": "APPL_DB", "table": "PORT_TABLE",
     "key": "Ethernet4", "op": "SET", "fvs": [["mtu", "1500"]], "seq": 2},
]
#: stderr lines a quiet run may print: progress, and the archive note (first run)
ALLOWED_STDERR = ("swssd replay: running for ", "swssd replay: saving the JVM's class archive")
ARCHIVE_MAPPED = "source: shared objects file (top)"


def _capture(tmp_path: Path) -> Path:
    path = tmp_path / "caps" / "sw1" / "swssd.capture.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return path


def _run(capture: Path, out: Path, cache: Path, *extra: str, quiet: bool = True) -> tuple[str, str]:
    """One fresh process with this cache directory: (stdout with the output path as OUT, stderr)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), jvm.ENV_SWITCH: "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "swssd.replay", "state", str(capture), "--output", str(out), "--show", "5",
         *extra],
        # in its own directory: a JVM that crashes (the forged archive) leaves hs_err_pid*.log there
        capture_output=True, text=True, timeout=600, env=env, cwd=out.parent,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if quiet:
        noise = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith(ALLOWED_STDERR)]
        assert noise == [], proc.stderr
    return proc.stdout.replace(str(out), "OUT"), proc.stderr


def _archives(cache: Path) -> list[Path]:
    return sorted((cache / "swssd").glob("replay-cds-*.jsa"))


def _class_log(tmp_path: Path, name: str) -> tuple[Path, list[str]]:
    log = tmp_path / f"{name}.log"
    return log, ["--conf", f"spark.driver.extraJavaOptions=-Xlog:class+load=info:file={log}"]


@dataclass(frozen=True)
class Made:
    """A cache in which a first run wrote the archive, and what the runs around it said."""

    cache: Path
    capture: Path
    first: str  # the first run's stdout
    second: str  # stdout of a run started while the first one's archive was being written
    second_err: str
    archive_written: os.stat_result  # the archive as its keeper left it


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Made:
    """The first run writes the archive in the background; a second run started meanwhile (the
    archive is written in 20-60 s) runs without it. One archive dump serves the module's tests."""
    tmp = tmp_path_factory.mktemp("jvm")
    cache, capture = tmp / "cache", _capture(tmp)
    first, err = _run(capture, tmp / "out1", cache)
    assert "saving the JVM's class archive" in err and "in the background" in err
    assert not _archives(cache), "the second run must start while the first's archive is written"
    second, second_err = _run(capture, tmp / "out2", cache)
    _wait_for_archive(cache)
    for _ in range(1500):
        if _lock_free(cache):
            break
        time.sleep(0.2)
    (archive,) = _archives(cache)
    return Made(cache, capture, first, second, second_err, archive.stat())


def _wait_for_archive(cache: Path) -> None:
    """The first run returned while its JVM writes the archive and a keeper takes it: wait for
    the keeper to be done (the archive and its recorded size in place, no temporary file)."""
    directory = cache / "swssd"
    for _ in range(3000):
        if _archives(cache) and all(Path(f"{a}.size").exists() for a in _archives(cache)) \
                and not list(directory.glob("*.tmp")):
            return
        time.sleep(0.2)
    raise AssertionError(f"no archive kept in {directory}: {sorted(p.name for p in directory.iterdir())}")


def test_the_first_run_writes_the_archive_and_the_next_maps_it(made: Made, tmp_path: Path) -> None:
    cache, capture, first = made.cache, made.capture, made.first
    assert "2 entries in 1 tables" in first and "Ethernet4" in first
    (archive,) = _archives(cache)
    assert int(Path(f"{archive}.size").read_text()) == archive.stat().st_size > 0
    assert not list((cache / "swssd").glob("*.tmp"))
    log, extra = _class_log(tmp_path, "mapped")
    second, err = _run(capture, tmp_path / "out", cache, *extra)
    assert second == first
    assert "saving the JVM's class archive" not in err
    assert ARCHIVE_MAPPED in log.read_text()


def _lock_free(cache: Path) -> bool:
    """No run or keeper holds the claim on writing an archive."""
    import fcntl

    for lock in (cache / "swssd").glob("replay-cds-*.lock"):
        with lock.open("rb") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False
    return True


def test_the_archive_is_written_once_for_replays_in_a_row(made: Made, tmp_path: Path) -> None:
    """A replay started while the first one's JVM and keeper still write the archive (20-60 s)
    runs without it and writes none; once kept, later replays map it and leave it as it is."""
    cache, capture, first = made.cache, made.capture, made.first
    assert made.second == first
    assert "saving the JVM's class archive" not in made.second_err
    (archive,) = _archives(cache)
    written = made.archive_written
    log, extra = _class_log(tmp_path, "third")
    third, err = _run(capture, tmp_path / "out3", cache, *extra)
    assert third == first and "saving the JVM's class archive" not in err
    assert ARCHIVE_MAPPED in log.read_text()
    time.sleep(1)
    assert _lock_free(cache) and _archives(cache) == [archive] and not list((cache / "swssd").glob("*.tmp"))
    now = archive.stat()
    assert (now.st_ino, now.st_mtime_ns, now.st_size) == (written.st_ino, written.st_mtime_ns, written.st_size)


def _damaged_cache(made: Made, tmp_path: Path, damage: str) -> Path:
    """A copy of the made cache with its archive damaged; its recorded size kept right."""
    cache = tmp_path / "cache"
    (archive,) = _archives(made.cache)
    (cache / "swssd").mkdir(parents=True)
    copy = cache / "swssd" / archive.name
    data = bytearray(archive.read_bytes())
    if damage == "flipped":  # bytes changed in the middle: the JVM's checksum catches it
        data[len(data) // 2: len(data) // 2 + 64] = b"\xff" * 64
    elif damage == "truncated":  # and its recorded size forged to match: the JVM itself fails
        data = data[: len(data) // 3]
    elif damage == "garbage":
        data = bytearray(b"not an archive" * 100)
    copy.write_bytes(bytes(data))
    Path(f"{copy}.size").write_text(f"{len(data)}\n")
    return cache


@pytest.mark.parametrize("damage", ["flipped", "garbage", "truncated"])
def test_a_damaged_archive_gives_the_same_results(made: Made, tmp_path: Path, damage: str) -> None:
    cache = _damaged_cache(made, tmp_path, damage)
    log, extra = _class_log(tmp_path, damage)
    # a JVM that crashes on the forged archive prints its report on stdout before the gateway retry
    out, _ = _run(made.capture, tmp_path / "out", cache, *extra, quiet=damage != "truncated")
    if damage == "truncated":
        out = out[out.index("read 2 lines"):]
        assert not _archives(cache)  # refused at start: dropped, a later run makes a new one
    assert out == made.first
    assert ARCHIVE_MAPPED not in log.read_text()


def _damage(data: bytes, damage: str) -> bytes:
    if damage == "flipped":  # bytes changed in the middle: the JVM's checksum catches it
        return data[: len(data) // 2] + b"\xff" * 64 + data[len(data) // 2 + 64:]
    if damage == "truncated":
        return data[: len(data) // 3]
    if damage == "garbage":
        return b"not an archive" * 100
    return data


@pytest.mark.parametrize("damage", ["none", "flipped", "garbage", "truncated", "empty"])
def test_the_keeper_keeps_only_an_archive_that_maps(
    spark: SparkSession, made: Made, tmp_path: Path, damage: str,
) -> None:
    """The keeper of a first run's archive checks it with a java of the same class path and
    options as the JVM that wrote it (here the test session's JVM, on the same jars)."""
    (archive,) = _archives(made.cache)
    pid = SparkContext._gateway.proc.pid  # type: ignore[union-attr]
    cmdline = [c for c in Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0") if c]
    dump_to, final = tmp_path / "replay-cds-k.1.tmp", tmp_path / "replay-cds-k.jsa"
    dump_to.write_bytes(b"" if damage == "empty" else _damage(archive.read_bytes(), damage))
    other = tmp_path / "replay-cds-old.jsa"  # another installation's: goes once one is kept
    other.write_bytes(b"x")
    gone = subprocess.Popen(["true"])
    gone.wait()
    command = jvm.verify_command(cmdline, dump_to)
    assert command is not None and "-Xshare:on" in command and not any("ArchiveClassesAtExit" in c for c in command)
    job = {"pid": gone.pid, "started": "1", "dump_to": str(dump_to), "final": str(final), "verify": command}
    kept = jvm.keep_when_exited(job)
    assert kept == (damage == "none")
    assert not dump_to.exists()
    assert final.exists() == kept and other.exists() != kept
    if kept:
        assert int(Path(f"{final}.size").read_text()) == final.stat().st_size == archive.stat().st_size


def test_the_keeper_waits_for_that_very_process(tmp_path: Path) -> None:
    """A running process has a start time; an exited one (a zombie, or reaped) has none."""
    assert jvm._proc_start_time(os.getpid())
    child = subprocess.Popen(["true"])
    while (Path(f"/proc/{child.pid}/stat").read_text().split(") ")[1][0]) != "Z":
        time.sleep(0.01)
    assert jvm._proc_start_time(child.pid) is None  # exited, not yet reaped
    child.wait()
    assert jvm._proc_start_time(child.pid) is None
    assert jvm.verify_command(["/bin/sh", "-c", "x"], tmp_path / "a.jsa") is None
    assert jvm.hand_off(jvm.Start([]), os.getpid()) is False  # no archive to write


def test_an_unwritable_cache_directory_is_no_problem(made: Made, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("the cache directory cannot be made under a file, not even by root\n")
    out, err = _run(made.capture, tmp_path / "out", blocker / "cache")
    assert out == made.first
    assert "saving the JVM's class archive" not in err


# -- the decisions, without a JVM ---------------------------------------------------------


def test_plan_uses_a_complete_archive_and_makes_one_otherwise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(jvm.ENV_SWITCH, raising=False)
    monkeypatch.setattr(jvm, "fingerprint", lambda: "k")
    monkeypatch.setattr(jvm, "_java", lambda: Path("/usr/lib/jvm/java-17-openjdk-amd64/bin/java"))
    if not Path("/usr/lib/jvm/java-17-openjdk-amd64/lib/server/classes.jsa").is_file():
        pytest.skip("no Debian Java 17 with a base CDS archive")
    first = jvm.plan(c1=False, directory=tmp_path)
    assert first.archive is None and first.dump_to is not None
    assert f"-XX:ArchiveClassesAtExit={first.dump_to}" in first.options
    assert "-XX:TieredStopAtLevel=1" not in first.options
    archive = tmp_path / "replay-cds-k.jsa"
    assert first.final == archive
    archive.write_bytes(b"x" * 100)
    # while the first run may still write it, no other run writes one
    meanwhile = jvm.plan(c1=True, directory=tmp_path)
    assert meanwhile.dump_to is None and meanwhile.archive is None and meanwhile.claim is None
    assert not any("Archive" in o or "Shared" in o for o in meanwhile.options)
    first.release()  # its archive kept or given up
    again = jvm.plan(c1=True, directory=tmp_path)
    assert again.dump_to is not None  # no recorded size: incomplete
    again.release()
    Path(f"{archive}.size").write_text("99\n")
    assert jvm.plan(c1=True, directory=tmp_path).archive is None  # not the recorded size
    Path(f"{archive}.size").write_text("100\n")
    used = jvm.plan(c1=True, directory=tmp_path)
    assert used.archive == archive and used.dump_to is None
    assert f"-XX:SharedArchiveFile={archive}" in used.options and "-XX:TieredStopAtLevel=1" in used.options
    used.drop_cds()
    assert not archive.exists() and not any("Shared" in o for o in used.options)


def test_plan_stays_out_of_the_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    for directory, env, user in [
        (blocker / "cache", None, ""),  # unwritable
        (tmp_path, "0", ""),  # turned off
        (tmp_path, None, "-XX:SharedArchiveFile=/their/own.jsa"),  # the user's own CDS
    ]:
        if env is None:
            monkeypatch.delenv(jvm.ENV_SWITCH, raising=False)
        else:
            monkeypatch.setenv(jvm.ENV_SWITCH, env)
        start = jvm.plan(c1=True, java_options=user, directory=directory)
        assert start.archive is None and start.dump_to is None
        assert not any("Archive" in o for o in start.options)


def test_small_inputs_by_size(tmp_path: Path) -> None:
    plain, packed = tmp_path / "a.jsonl", tmp_path / "b.jsonl.1.gz"
    plain.write_bytes(b"x" * 1000)
    packed.write_bytes(b"x" * 1000)
    assert jvm.input_bytes([str(plain), str(packed)]) == 1000 + 1000 * jvm.GZ_FACTOR
    assert jvm.input_bytes([str(plain), "hdfs://nn/caps"]) is None
    assert jvm.is_small([str(plain)]) and not jvm.is_small(["s3a://bucket/caps"])
    assert not jvm.is_small([str(plain), str(packed)], limit=8999) and jvm.is_small([str(packed)], limit=8000)


def _fleet(root: Path, plain_mib: int, gz_files: int) -> list[str]:
    """A fleet's swss.rec as logrotate leaves it (sparse files): 4 hosts, each a plain file of
    `plain_mib` MiB and `gz_files` rotated `.gz` files of 2 MiB (about 2 million swss.rec lines
    of bench/fleet_rec.py for 20 MiB plain and 2 files a host)."""
    files = []
    for host in range(1, 5):
        (root / f"sw{host}").mkdir(parents=True)
        names = ["swss.rec"] + [f"swss.rec.{n}.gz" for n in range(2, gz_files + 2)]
        for name in names:
            path = root / f"sw{host}" / name
            path.touch()
            os.truncate(path, (plain_mib if name == "swss.rec" else 2) << 20)
            files.append(str(path))
    return files


def test_a_capture_of_a_million_events_runs_with_c1_alone_and_two_million_with_c2_for_the_data_path(
        tmp_path: Path) -> None:
    """The tiered policy's fixed cost is paid back from about 1.5 million events on 2 cores (jit.py)."""
    assert jvm.is_small(_fleet(tmp_path / "1m", 10, 1), jit.C1_INPUT_BYTES)
    assert not jvm.is_small(_fleet(tmp_path / "2m", 20, 2), jit.C1_INPUT_BYTES)


# -- the small-input Spark settings: the same outputs ---------------------------------------


def _outputs(spark: SparkSession, out: Path) -> dict[str, list[tuple[str, ...]]]:
    found = {}
    for d in sorted(p for p in out.rglob("*") if p.is_dir() and list(p.glob("*.parquet"))):
        df = spark.read.parquet(str(d))
        found[str(d.relative_to(out))] = sorted(tuple(str(v) for v in r) for r in df.collect())
    return found


@pytest.mark.parametrize("command", [["state", "--show", "20"], ["history", "--limit", "20"], ["stats"]])
def test_small_input_settings_give_the_same_outputs(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], command: list[str],
) -> None:
    rec = Path(__file__).parent / "fixtures" / "swss_rec" / "sw-leaf1"
    inputs = [str(rec / "swss.rec.1"), str(rec / "swss.rec"), str(_capture(tmp_path))]
    seen = {}
    for small in (True, False):
        monkeypatch.setattr(jvm, "SMALL_INPUT_BYTES", 1 << 40 if small else -1)
        out = tmp_path / f"out-{small}"
        before = spark.conf.get("spark.sql.codegen.wholeStage")
        assert main([command[0], *inputs, *command[1:], "--output", str(out)]) == 0
        assert spark.conf.get("spark.sql.codegen.wholeStage") == before  # restored after the command
        seen[small] = (capsys.readouterr().out.replace(str(out), "OUT"), _outputs(spark, out))
    assert seen[True][1] and seen[True] == seen[False]


def _installation(root: Path, jar: str = "spark-core.jar") -> tuple[Path, Path]:
    """A Java and a Spark jars directory as fingerprint() sees them (their files' stat)."""
    java, jars = root / "jdk" / "bin" / "java", root / "pyspark" / "jars"
    java.parent.mkdir(parents=True)
    jars.mkdir(parents=True)
    java.write_text("java")
    (jars / jar).write_text("jar")
    return java, jars


def _kept_archive(cache: Path, of: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    """An archive of installation `of`, kept as a keeper keeps one (its size and installation recorded)."""
    monkeypatch.setattr(jvm, "installation", lambda: of)
    final = cache / f"replay-cds-{jvm.fingerprint(of)}.jsa"
    dump_to = cache / f"replay-cds-{jvm.fingerprint(of)}.1.tmp"
    dump_to.write_bytes(b"archive of " + str(of[1]).encode())
    assert jvm.keep(dump_to, final)
    return final


def test_each_installation_keeps_its_own_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two venvs on one machine (two PySpark installations) each keep their archive; one whose
    installation was upgraded or removed goes, as does one written before installations were recorded."""
    cache = tmp_path / "cache"
    cache.mkdir()
    first, second, third = (_installation(tmp_path / name) for name in ("venv1", "venv2", "venv3"))
    old = cache / "replay-cds-0123456789abcdef.jsa"  # no installation recorded
    old.write_bytes(b"x")
    Path(f"{old}.size").write_text("1\n")
    a = _kept_archive(cache, first, monkeypatch)
    b = _kept_archive(cache, second, monkeypatch)
    c = _kept_archive(cache, third, monkeypatch)
    assert a.exists() and b.exists() and c.exists() and not old.exists() and not Path(f"{old}.size").exists()
    assert json.loads(Path(f"{a}.install").read_text()) == {"java": str(first[0]), "jars": str(first[1])}
    (second[1] / "spark-core-4.4.jar").write_text("an upgrade")  # venv2's PySpark changed
    shutil.rmtree(tmp_path / "venv3")  # venv3 removed
    again = _kept_archive(cache, first, monkeypatch)
    assert again == a and a.exists()
    assert not b.exists() and not Path(f"{b}.size").exists() and not Path(f"{b}.install").exists()
    assert not c.exists()
