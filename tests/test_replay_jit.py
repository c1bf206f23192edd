"""The replay JVM's compiler options (swssd/replay/jit.py): C1 alone for a small input, C2 for the
data path alone otherwise, the user's own options left alone.

The directives file is read by a real `java` (HotSpot refuses to start on a file it cannot find,
and ignores one it cannot parse), and a replay run with it, a fresh process, prints what a run
with C1 alone prints, with no line about the directives.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from swssd.replay import jit

RECORDS = [
    {"ts": "2026-11-25T23:41:16.123456Z", "host": "sw1", "db": "APPL_DB", "table": "PORT_TABLE",
     "key": "Ethernet0", "op": "SET", "fvs": [["mtu", "9100"], ["admin_status", "up"]], "seq": 1},
    {"ts": "2026-11-25T23:41:17.000000Z", "host": "sw1", "db": "APPL_DB", "table": "PORT_TABLE",
     "key": "Ethernet4", "op": "DEL", "fvs": [], "seq": 2},
]


def test_small_inputs_get_c1_alone_and_large_ones_c2_for_the_data_path(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"):
        monkeypatch.delenv(name, raising=False)
    assert jit.compiler_options(c1=True) == ["-XX:TieredStopAtLevel=1"]
    large = jit.compiler_options(c1=False, java_options="-Xlog:gc=info")
    assert f"-XX:CompilerDirectivesFile={jit.DIRECTIVES}" in large
    assert "-XX:+UnlockDiagnosticVMOptions" in large and "-XX:+DisplayVMOutputToStderr" in large
    assert not any("TieredStopAtLevel" in o for o in large)


def test_the_users_own_compiler_options_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"):
        monkeypatch.delenv(name, raising=False)
    for theirs in ("-XX:TieredStopAtLevel=4", "-XX:-TieredCompilation", "-XX:CompileCommand=quiet",
                   "-XX:CompilerDirectivesFile=/their/own.json"):
        assert jit.compiler_options(c1=False, java_options=theirs) == []
        assert jit.compiler_options(c1=True, java_options=theirs) == []
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1")
    assert jit.compiler_options(c1=False) == []


def test_a_missing_directives_file_is_not_given_to_the_jvm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jit, "DIRECTIVES", tmp_path / "gone.json")
    assert jit.compiler_options(c1=False) == []


@pytest.mark.skipif(shutil.which("java") is None, reason="no java on PATH")
def test_hotspot_reads_every_directive_and_says_so_on_stderr_only() -> None:
    entries = json.loads(jit.DIRECTIVES.read_text())
    proc = subprocess.run(["java", *jit.compiler_options(c1=False), "-version"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert f"{len(entries)} compiler directives added" in proc.stderr.splitlines(), proc.stderr
    assert "failed" not in proc.stderr.lower()


_SCRIPT = """
import json, sys
import swssd.replay.jit as jit
jit.C1_INPUT_BYTES = int(sys.argv[1])
from pyspark import SparkContext
from swssd.replay.cli import main
code = main(sys.argv[2:])
bean = SparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
print("JVM " + json.dumps(list(bean.getInputArguments())))
sys.exit(code)
"""


def _replay(capture: Path, out: Path, c1_input_bytes: int) -> tuple[str, list[str], str]:
    """A fresh replay process with C1_INPUT_BYTES set: (stdout without the JVM line, the JVM's
    arguments, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_", "JAVA_TOOL", "JDK_JAVA"))}
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(c1_input_bytes), "state", str(capture), "--output", str(out),
         "--show", "5"],
        capture_output=True, text=True, timeout=600, env={**env, "SWSSD_REPLAY_CDS": "0"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    arguments = json.loads(next(line for line in lines if line.startswith("JVM "))[4:])
    shown = "\n".join(line for line in lines if not line.startswith("JVM ")).replace(str(out), "OUT")
    return shown, arguments, proc.stderr


def test_a_replay_with_c2_for_the_data_path_prints_what_one_with_c1_alone_prints(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    capture = tmp_path / "caps" / "sw1" / "swssd.capture.jsonl"
    capture.parent.mkdir(parents=True)
    capture.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    alone, c1_arguments, _ = _replay(capture, tmp_path / "c1", c1_input_bytes=1 << 30)
    tiered, arguments, stderr = _replay(capture, tmp_path / "tiered", c1_input_bytes=-1)
    assert "-XX:TieredStopAtLevel=1" in c1_arguments and not any("Directives" in a for a in c1_arguments)
    assert f"-XX:CompilerDirectivesFile={jit.DIRECTIVES}" in arguments
    assert not any("TieredStopAtLevel" in a for a in arguments)
    assert tiered == alone and "Ethernet0" in alone
    assert "directives" not in stderr, stderr
