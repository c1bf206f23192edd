"""A faster start for the JVM a replay launches: a class-data-sharing archive, and C1 for small inputs.

Why: a replay of a few events spends nearly all its time in the JVM's start and in Spark's code
running for the first time (loading and verifying some 20,000 classes, then compiling the hot
ones), not in the job. Two JVM features cut that CPU time by about two thirds on a 2-core machine
(BENCHMARKS.md, "Replay start-up"):

- Class data sharing (CDS): the classes a replay loads, parsed and verified once, are kept in an
  archive that later JVMs map at start (`-XX:SharedArchiveFile`). The first replay that starts a
  JVM makes it (`-XX:ArchiveClassesAtExit`): the JVM writes it when it exits, after the command
  printed its results, and that run waits for it (a few seconds, once). It lives in
  `$XDG_CACHE_HOME/swssd/` (`~/.cache/swssd/`), named by a fingerprint of the Java runtime and of
  Spark's jars, so that an upgrade of either makes a new one (the old one is then removed).
- For inputs up to C1_INPUT_BYTES, C1 only (`-XX:TieredStopAtLevel=1`): C2's optimizing
  compiles cost more CPU than they save in a job of less than a minute or so.

Nothing here may make a replay fail: with an unwritable cache directory, or an archive that is
missing, stale, damaged or half-written, the JVM starts without it. An archive is written under a
temporary name and renamed once the JVM exited cleanly, its size is recorded beside it and checked
before each use (a truncated archive would crash the JVM), the JVM checksums it
(`-XX:+VerifySharedSpaces`) and ignores one that does not match, and the JVM's own CDS messages
are off (they would go to stdout). `SWSSD_REPLAY_CDS=0` turns the archive off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: inputs up to this many bytes (a .gz file counting GZ_FACTOR times its size) run with C1 only
C1_INPUT_BYTES = 64 << 20
#: and up to this many with SMALL_SQL_CONF (interpreted expressions cost more than compiling
#: them beyond a few thousand events)
SMALL_INPUT_BYTES = 1 << 20
GZ_FACTOR = 8
#: JVM options for an input up to C1_INPUT_BYTES
C1_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1",)
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


def is_small(paths: Sequence[str], limit: int | None = None) -> bool:
    """Whether the inputs hold at most `limit` bytes (default SMALL_INPUT_BYTES)."""
    size = input_bytes(paths)
    return size is not None and size <= (SMALL_INPUT_BYTES if limit is None else limit)


def cache_dir() -> Path:
    """Where the archive goes: $XDG_CACHE_HOME/swssd, else ~/.cache/swssd."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "swssd"


def _java() -> Path | None:
    """The java that spark-submit runs: $JAVA_HOME/bin/java, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return Path(found).resolve() if found and os.path.exists(found) else None


def _spark_jars() -> Path:
    home = os.environ.get("SPARK_HOME")
    if home:
        return Path(home) / "jars"
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def fingerprint() -> str | None:
    """What an archive is only valid for: the Java runtime and the jars on Spark's class path."""
    java = _java()
    if java is None:
        return None
    h = hashlib.sha256()
    try:
        for f in (java, java.parent.parent / "lib" / "server" / "libjvm.so"):
            if f.exists():
                st = f.stat()
                h.update(f"{f}|{st.st_size}|{st.st_mtime_ns}\n".encode())
        jars = _spark_jars()
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
    given = " ".join([java_options, os.environ.get("JAVA_TOOL_OPTIONS", ""), os.environ.get("JDK_JAVA_OPTIONS", "")])
    return any(word in given for word in _CDS_WORDS)


def plan(c1: bool, java_options: str = "", directory: Path | None = None) -> Start:
    """The JVM options for a replay that starts a JVM: use the archive, or make one.

    `c1`: C1 only (an input up to C1_INPUT_BYTES). `java_options`: the user's own
    (spark.driver.extraJavaOptions), to stay out of their CDS.
    """
    options = list(C1_JVM_OPTIONS) if c1 else []
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
        _remove_stale(directory)
        dump_to = directory / f"{_PREFIX}{key}.{os.getpid()}.tmp"
        dump_to.touch()  # writable? (the JVM replaces it)
        dump_to.unlink()
    except OSError:
        return Start(options)
    return Start([*options, f"-XX:ArchiveClassesAtExit={dump_to}"], dump_to=dump_to)


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
        return
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
    final = start.final
    try:
        size = start.dump_to.stat().st_size
        if code != 0 or size == 0:
            raise OSError("no archive")
        os.replace(start.dump_to, final)
        tmp = final.with_name(final.name + f".size.{os.getpid()}.tmp")
        tmp.write_text(f"{size}\n")
        os.replace(tmp, _size_file(final))
    except OSError:
        _remove(start.dump_to)
        return
    for p in final.parent.glob(f"{_PREFIX}*.jsa*"):
        if not p.name.startswith(final.name):
            _remove(p)
