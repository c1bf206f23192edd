"""The `swssd` console script: the replay skips the daemon's command line, the rest goes to it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SWSSD = Path(sys.executable).parent / "swssd"


def _imported(stderr: str) -> set[str]:
    """Top-level package names a `python -X importtime` run imported."""
    lines = (line for line in stderr.splitlines() if line.startswith("import time:"))
    return {line.rsplit("|", 1)[1].strip().split(".")[0] for line in lines}


def test_replay_starts_without_the_daemons_imports(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", str(SWSSD), "replay", "state", str(tmp_path / "missing.jsonl"),
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "swssd replay:" in proc.stderr and "missing.jsonl" in proc.stderr
    imported = _imported(proc.stderr)
    assert "swssd" in imported and not {"redis", "pydantic", "uvloop"} & imported


def test_other_commands_are_the_daemons_command_line() -> None:
    proc = subprocess.run([str(SWSSD), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "replay" in proc.stdout and "run" in proc.stdout
    proc = subprocess.run([str(SWSSD), "replay", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "state" in proc.stdout
