"""A faster start for the JVM a replay launches: a class-data-sharing archive, and its compilers'
options (jit.py).

Why: a replay of a few events spends nearly all its time in the JVM's start and in Spark's code
running for the first time (loading and verifying some 20,000 classes, then compiling the hot
ones), not in the job. Two JVM features cut that CPU time by about two thirds on a 2-core machine
(BENCHMARKS.md, "Replay start-up"):

- Class data sharing (CDS): the classes a replay loads, parsed and verified once, are kept in an
  archive that later JVMs map at start (`-XX:SharedArchiveFile`). The first replay that starts a
  JVM makes it (`-XX:ArchiveClassesAtExit`): the JVM writes it when it exits, after the command
  printed its results and returned (see hand_off: 20-60 s nobody waits for). One run at a time
  writes it: the run that decides to holds a lock (`flock` on replay-cds-<key>.lock) until its
  archive is kept or given up, its keeper holding it after the command returned; a run started
  meanwhile runs without the archive and writes none (before, every run started in those
  20-60 s wrote one more, printed so, and replaced the archive with its own). It lives in
  `$XDG_CACHE_HOME/swssd/` (`~/.cache/swssd/`), named by a fingerprint of the Java runtime and of
  Spark's jars, so that an upgrade of either makes a new one; the installation is recorded
  beside it, and an archive goes when its installation is gone or changed. Each installation on
  the machine (the PySpark of each venv) keeps its own: when each replay removed the others',
  two venvs in use rewrote 165 MB in turn.
- The compilers' options (jit.py): C1 alone for an input up to jit.C1_INPUT_BYTES, else C2
  for the classes of the data path alone.

Nothing here may make a replay fail: with an unwritable cache directory, or an archive that is
missing, stale, damaged or half-written, the JVM starts without it. An archive is written under a
temporary name and renamed once the JVM exited cleanly (or a JVM of the same class path and
options mapped it with -Xshare:on, when the command did not wait), its size is recorded beside it and checked
before each use (a truncated archive would crash the JVM), the JVM checksums it
(`-XX:+VerifySharedSpaces`) and ignores one that does not match, and the JVM's own CDS messages
are off (they would go to stdout). `SWSSD_REPLAY_CDS=0` turns the archive off.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .gateway import spark_home
from .jit import compiler_options, user_options
from .output import write_replacing

#: inputs up to this many bytes (a .gz file counting GZ_FACTOR times its size) run with
#: SMALL_SQL_CONF (interpreted expressions cost more than compiling them beyond a few thousand
#: events)
SMALL_INPUT_BYTES = 1 << 20
GZ_FACTOR = 8
#: Spark SQL settings for a small input: no generated code to compile, one shuffle partition, and
#: no adaptive re-planning (each adaptive stage is another job)
SMALL_SQL_CONF = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.adaptive.enabled": "false",
}
ENV_SWITCH = "SWSSD_REPLAY_CDS"
_QUIET_CDS = "-Xlog:cds*=off"
_PREFIX = "replay-cds-"
_CDS_OPTIONS = ("-XX:SharedArchiveFile=", "-XX:ArchiveClassesAtExit=", "-XX:+VerifySharedSpaces")
_CDS_WORDS = ("SharedArchiveFile", "ArchiveClassesAtExit", "-Xshare", "SharedClassListFile")
_STALE_TMP_SECONDS = 3600
_DUMP_TIMEOUT = 180.0


def input_bytes(paths: Sequence[str]) -> int | None:
    """Bytes the inputs hold (a .gz file weighted by GZ_FACTOR); None when one is not a local file."""
    total = 0
    for text in paths:
        local = text.removeprefix("file://")
        if "://" in local:
            return None
        try:
            size = os.stat(local).st_size
        except OSError:
            return None
        total += size * GZ_FACTOR if local.endswith(".gz") else size
    return total


def is_small(paths: Sequence[str], limit: int | None = None, segment_bytes: int | None = 0) -> bool:
    """Whether the inputs hold at most `limit` bytes (default SMALL_INPUT_BYTES), with
    `segment_bytes` for input segments (the bytes of their sources; None: not known)."""
    size = input_bytes(paths)
    if size is None or segment_bytes is None:
        return False
    return size + segment_bytes <= (SMALL_INPUT_BYTES if limit is None else limit)


def cache_dir() -> Path:
    """Where the archive goes: $XDG_CACHE_HOME/swssd, else ~/.cache/swssd."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "swssd"


def _java() -> Path | None:
    """The java that spark-submit runs: $JAVA_HOME/bin/java, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return Path(found).resolve() if found and os.path.exists(found) else None


def _spark_jars() -> Path | None:
    home = spark_home()  # without importing PySpark: plan() runs before it is imported
    return None if home is None else home / "jars"


def installation() -> tuple[Path, Path] | None:
    """This replay's Java runtime and the directory of Spark's jars (its PySpark's, in a venv)."""
    java, jars = _java(), _spark_jars()
    return None if java is None or jars is None else (java, jars)


def fingerprint(of: tuple[Path, Path] | None = None) -> str | None:
    """What an archive is only valid for: the Java runtime and the jars on Spark's class path
    (`of`: that installation, by default this replay's)."""
    found = of or installation()
    if found is None:
        return None
    java, jars = found
    h = hashlib.sha256()
    try:
        for f in (java, java.parent.parent / "lib" / "server" / "libjvm.so"):
            if f.exists():
                st = f.stat()
                h.update(f"{f}|{st.st_size}|{st.st_mtime_ns}\n".encode())
        h.update(f"{jars.resolve()}\n".encode())
        for jar in sorted(os.scandir(jars), key=lambda e: e.name):
            st = jar.stat()
            h.update(f"{jar.name}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    except OSError:
        return None
    return h.hexdigest()[:16]


@dataclass
class Start:
    """How to start the JVM: the options, and the archive it uses or writes."""

    options: list[str]
    #: the archive these options map, if any
    archive: Path | None = None
    #: the temporary file the JVM writes an archive to at exit, if any
    dump_to: Path | None = None
    #: a descriptor holding the lock that makes this run the archive's one writer (see _claim)
    claim: int | None = None

    @property
    def final(self) -> Path | None:
        """Where a written archive goes."""
        if self.dump_to is None:
            return None
        return self.dump_to.with_name(self.dump_to.name.split(".", 1)[0] + ".jsa")

    def drop_cds(self) -> None:
        """Start without CDS from now on: the JVM did not start with it (its archive goes)."""
        if self.archive is not None:
            _remove(self.archive, _size_file(self.archive))
        if self.dump_to is not None:
            _remove(self.dump_to)
        self.options = [o for o in self.options if not o.startswith(_CDS_OPTIONS)]
        self.archive = self.dump_to = None
        self.release()

    def release(self) -> None:
        """Let other runs write the archive (this one's is kept, given up, or in a keeper's hands)."""
        if self.claim is not None:
            with contextlib.suppress(OSError):
                os.close(self.claim)
            self.claim = None


def _size_file(archive: Path) -> Path:
    return archive.with_name(archive.name + ".size")


def _remove(*paths: Path) -> None:
    for p in paths:
        with contextlib.suppress(OSError):
            p.unlink()


def _valid(archive: Path) -> bool:
    """The archive is there, complete: its size is the one recorded when it was written."""
    try:
        recorded = int(_size_file(archive).read_text().strip())
        return recorded > 0 and archive.stat().st_size == recorded
    except (OSError, ValueError):
        return False


def _cds_given(java_options: str) -> bool:
    """The user chose class data sharing options themselves (theirs and ours would conflict)."""
    given = user_options(java_options)
    return any(word in given for word in _CDS_WORDS)


def plan(c1: bool, java_options: str = "", directory: Path | None = None) -> Start:
    """The JVM options for a replay that starts a JVM: use the archive, or make one.

    `c1`: C1 alone (an input up to jit.C1_INPUT_BYTES). `java_options`: the user's own
    (spark.driver.extraJavaOptions), to stay out of their CDS and compiler options.
    """
    options = compiler_options(c1, java_options)
    if os.environ.get(ENV_SWITCH, "1").strip().lower() in ("0", "no", "off", "false") or _cds_given(java_options):
        return Start(options)
    java = _java()
    # a dynamic archive sits on top of the JDK's own; without it the JVM refuses to start
    if java is None or not (java.parent.parent / "lib" / "server" / "classes.jsa").is_file():
        return Start(options)
    key = fingerprint()
    if key is None:
        return Start(options)
    directory = directory or cache_dir()
    archive = directory / f"{_PREFIX}{key}.jsa"
    options.append(_QUIET_CDS)
    if _valid(archive):
        return Start([*options, "-XX:+VerifySharedSpaces", f"-XX:SharedArchiveFile={archive}"], archive=archive)
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        claim = _claim(directory / f"{_PREFIX}{key}.lock")
        if claim is None:  # another run is writing it
            return Start(options)
        _remove_stale(directory)
        dump_to = directory / f"{_PREFIX}{key}.{os.getpid()}.tmp"
        dump_to.touch()  # writable? (the JVM replaces it)
        dump_to.unlink()
    except OSError:
        return Start(options)
    return Start([*options, f"-XX:ArchiveClassesAtExit={dump_to}"], dump_to=dump_to, claim=claim)


def _claim(lock: Path) -> int | None:
    """A descriptor holding an exclusive flock on `lock`, None when another holds it. The lock goes
    with the last descriptor of it (this process's, or the keeper's that inherited it): a run that
    is killed never leaves the archive unwritable."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _remove_stale(directory: Path) -> None:
    """Temporary files of runs that were killed while the JVM wrote them."""
    now = time.time()
    for p in directory.glob(f"{_PREFIX}*.tmp"):
        with contextlib.suppress(OSError):
            if now - p.stat().st_mtime > _STALE_TMP_SECONDS:
                p.unlink()


def finish(start: Start, proc: subprocess.Popen[bytes] | None, note: bool = True) -> None:
    """After the command: when this JVM writes an archive, let it exit, then keep the archive.

    The JVM writes the archive as it exits, which it does when its stdin closes; the archive is
    kept only when the JVM exited cleanly. Archives of other Java or Spark installations go.
    """
    if start.dump_to is None or proc is None or start.final is None:
        start.release()
        return
    try:
        _finish(start, proc, note)
    finally:
        start.release()


def _finish(start: Start, proc: subprocess.Popen[bytes], note: bool) -> None:
    assert start.dump_to is not None and start.final is not None
    if note:
        print(f"swssd replay: saving the JVM's class archive in {start.dump_to.parent} for faster starts "
              "(once)", file=sys.stderr, flush=True)
    try:
        if proc.stdin is not None:
            proc.stdin.close()
        code = proc.wait(timeout=_DUMP_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        _remove(start.dump_to)
        return
    if code != 0:
        _remove(start.dump_to)
        return
    keep(start.dump_to, start.final)


def keep(dump_to: Path, final: Path) -> bool:
    """Give a written archive its final name and record its size and installation beside it;
    the archives of installations that are gone or changed go (see _in_use)."""
    try:
        size = dump_to.stat().st_size
        if size == 0:
            raise OSError("no archive")
        os.replace(dump_to, final)
        _record(_size_file(final), f"{size}\n")
        found = installation()
        if found is not None:
            _record(_install_file(final), json.dumps({"java": str(found[0]), "jars": str(found[1])}) + "\n")
    except OSError:
        _remove(dump_to)
        return False
    for p in final.parent.glob(f"{_PREFIX}*.jsa*"):
        archive = p.with_name(p.name[: p.name.index(".jsa") + 4])
        if archive != final and not _in_use(archive):
            _remove(p, archive.with_name(archive.name.removesuffix(".jsa") + ".lock"))
    return True


def _install_file(archive: Path) -> Path:
    return archive.with_name(archive.name + ".install")


def _record(path: Path, text: str) -> None:
    write_replacing(path, text)


def _in_use(archive: Path) -> bool:
    """Whether `archive` belongs to an installation that is still there as it was when it was
    written: the Java and PySpark of another venv on this machine keep theirs (each replay
    removing the others' made two venvs rewrite 165 MB in turn), an upgraded or removed one's goes."""
    try:
        recorded = json.loads(_install_file(archive).read_text())
        of = (Path(recorded["java"]), Path(recorded["jars"]))
    except (OSError, ValueError, KeyError, TypeError):
        return False  # written before installations were recorded, or damaged
    return archive.is_file() and archive.name == f"{_PREFIX}{fingerprint(of)}.jsa"


# -- the archive written while the command returns -------------------------------------------
#
# Why: the JVM writes the archive as it exits, 20-60 s of a first run on a 2-core machine that the
# user would otherwise wait for. Instead the command hands its JVM's output to /dev/null (the JVM
# would otherwise hold the command's stdout and stderr open, and `$(swssd replay ...)` or a pipe
# would wait for it), starts a detached keeper process, and returns; its JVM, whose stdin closes,
# writes the archive and exits. The keeper cannot see that JVM's exit status (it is not its
# parent), so it checks the archive itself instead, as strictly as a JVM that maps it: a java with
# the same class path and options maps it with -Xshare:on -XX:+VerifySharedSpaces (any mismatch,
# checksum error or truncation fails it) and runs nothing else. Only then is it renamed and its
# size recorded; otherwise it goes. Where /proc is missing the command waits, as before.

_MAIN_CLASS = "org.apache.spark.deploy.SparkSubmit"
_POLL_SECONDS = 0.2


def _proc_start_time(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/PID/stat), None when it is gone or a zombie:
    with the pid it names one process, so a reused pid is not mistaken for the JVM."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def verify_command(cmdline: Sequence[str], archive: Path) -> list[str] | None:
    """A java command that maps `archive` the way the JVM of `cmdline` (its /proc cmdline) would,
    verifies it and exits: the same java, class path and options, -Xshare:on (fail rather than
    run without it), -version instead of Spark. None when cmdline is not such a JVM."""
    if not cmdline or _MAIN_CLASS not in cmdline or not os.path.basename(cmdline[0]).startswith("java"):
        return None
    options = [o for o in cmdline[1:cmdline.index(_MAIN_CLASS)]
               if not o.startswith(("-XX:ArchiveClassesAtExit=", "-XX:SharedArchiveFile=", "-Xlog", "-Xshare"))]
    return [cmdline[0], *options, "-Xshare:on", "-XX:+VerifySharedSpaces", f"-XX:SharedArchiveFile={archive}",
            "-Xlog:disable", "-XX:ErrorFile=/dev/null", "-XX:-CreateCoredumpFile", "-version"]


def archive_maps(command: Sequence[str]) -> bool:
    """Whether the verify_command ran cleanly."""
    try:
        return subprocess.run(list(command), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=_DUMP_TIMEOUT).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def hand_off(start: Start, pid: int) -> bool:
    """Start the detached keeper of the archive the JVM `pid` writes as it exits; False (nothing
    started) when that cannot be done here, and the caller waits for the JVM itself. The keeper
    inherits the claim on the archive and holds it until it is done."""
    if start.dump_to is None or start.final is None:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except (OSError, UnicodeDecodeError):
        return False
    started = _proc_start_time(pid)
    command = verify_command([c for c in cmdline if c], start.dump_to)
    if started is None or command is None:
        return False
    job = {"pid": pid, "started": started, "dump_to": str(start.dump_to), "final": str(start.final),
           "verify": command}
    try:
        subprocess.Popen(
            [sys.executable, "-m", "swssd.replay.jvm", json.dumps(job)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            cwd=start.dump_to.parent, start_new_session=True, pass_fds=() if start.claim is None else (start.claim,),
        )
    except OSError:
        return False
    start.release()
    return True


def keep_when_exited(job: dict[str, Any]) -> bool:
    """The keeper: wait for the JVM to be gone, then keep the archive if it maps (see above)."""
    dump_to, final = Path(job["dump_to"]), Path(job["final"])
    deadline = time.monotonic() + _DUMP_TIMEOUT
    while _proc_start_time(int(job["pid"])) == job["started"]:
        if time.monotonic() > deadline:
            _remove(dump_to)
            return False
        time.sleep(_POLL_SECONDS)
    if not dump_to.is_file() or not archive_maps(job["verify"]):
        _remove(dump_to)
        return False
    return keep(dump_to, final)


if __name__ == "__main__":
    sys.exit(0 if keep_when_exited(json.loads(sys.argv[1])) else 1)
