"""sonic-swss-common's own Python tests pass, unmodified, against the compatible layer
(tests/swss_common_suite.py runs them; skipped with its reason where it cannot run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = Path(__file__).with_name("swss_common_suite.py")


def test_sonic_swss_common_python_tests_pass_on_the_layer() -> None:
    done = subprocess.run([sys.executable, str(RUNNER), "--", "-q", "-p", "no:asyncio"],
                          capture_output=True, text=True, timeout=600)
    if done.returncode == 77:
        pytest.skip(done.stderr.strip())
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-3000:]
    assert "30 passed" in done.stdout, done.stdout[-2000:]
