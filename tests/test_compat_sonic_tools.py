"""Unmodified SONiC programs (sonic-py-common's helpers, counterpoll, db_migrator, config and show,
route_check, hostcfgd, featured, caclmgrd, procdockerstatsd, bgpcfgd) behave the same on the
compatible layer as on the binding: tests/sonic_tools_suite.py runs them on both and compares;
skipped with its reason when no SONiC tree ($SONIC_*_TREE) or binding is given."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = Path(__file__).with_name("sonic_tools_suite.py")


def test_sonic_programs_behave_the_same_on_the_layer() -> None:
    done = subprocess.run([sys.executable, str(RUNNER)], capture_output=True, text=True, timeout=900)
    if done.returncode == 77:
        pytest.skip(done.stderr.strip())
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "DIFFERS" not in done.stdout and ": same" in done.stdout, done.stdout
