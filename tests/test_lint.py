"""ruff, configured in pyproject.toml, reports nothing on the package, the tests and the benchmarks
(issue 13): the tests run it, so a finding fails the suite instead of piling up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PATHS = ("swssd", "tests", "bench")

pytest.importorskip("ruff", reason="ruff is in the test extra: pip install -e '.[test]'")


def ruff(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`ruff check` from the repository root, so pyproject.toml's [tool.ruff] applies (with no
    cache: the suite leaves no .ruff_cache in the tree)."""
    return subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", *args],
        capture_output=True, text=True, timeout=300, cwd=ROOT, input=stdin,
    )


def test_ruff_finds_nothing() -> None:
    out = ruff(*PATHS)
    assert out.returncode == 0, out.stdout + out.stderr


def module_with_a_line_of(length: int) -> str:
    return f'"""Module."""\n\nTEXT = "{"x" * (length - 9)}"\n'


def test_ruff_applies_the_project_configuration() -> None:
    """Not a vacuous pass: ruff checks the package against pyproject.toml's rules and its line length of 120."""
    at_limit = ruff("--stdin-filename", "swssd/long_line.py", "-", stdin=module_with_a_line_of(120))
    assert at_limit.returncode == 0, at_limit.stdout + at_limit.stderr
    over = ruff("--stdin-filename", "swssd/long_line.py", "-", stdin=module_with_a_line_of(121))
    assert over.returncode == 1, over.stdout + over.stderr
    assert "E501 Line too long (121 > 120)" in over.stdout, over.stdout
