"""`swssd demo` and `swssd run` without any Redis configured: both must work on a fresh machine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from daemon_harness import wait_until
from swssd.orch.config import DEFAULT_CONFIG
from swssd.redis.dbconfig import DEFAULT_PATH

CLI = [sys.executable, "-m", "swssd.cli"]


def clean_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SWSSD_DB_CONFIG", None)
    return env


def test_help_lists_the_commands() -> None:
    out = subprocess.run([*CLI, "--help"], capture_output=True, text=True, timeout=60, env=clean_env())
    assert out.returncode == 0
    assert "run" in out.stdout and "demo" in out.stdout and "exit status" in out.stdout


def test_demo_captures_and_dumps_what_replay_diff_compares(tmp_path: Path) -> None:
    """--capture gives the demo's capture (both forms), --dump its APPL_DB at the end; folding the
    capture (SETs merge, DELs remove) gives that APPL_DB, so `swssd replay diff` finds no difference."""
    out = subprocess.run([*CLI, "demo", "--seconds", "3", "--capture", "cap/sw1", "--dump", "live.json"],
                         capture_output=True, text=True, timeout=90, env=clean_env(), cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "cap" / "sw1" / "swss.rec").read_text().count("|SET|") > 0
    state: dict[str, dict[str, dict[str, str]]] = {}
    records = (tmp_path / "cap" / "sw1" / "swssd.capture.jsonl").read_text().splitlines()
    for record in map(json.loads, records):
        assert record["db"] == "APPL_DB"
        table = state.setdefault(record["table"], {})
        if record["op"] == "SET":
            table.setdefault(record["key"], {}).update(dict(record["fvs"]))
        else:
            table.pop(record["key"], None)
    assert records and json.loads((tmp_path / "live.json").read_text()) == state


def test_demo_host_names_the_captured_switch(tmp_path: Path) -> None:
    out = subprocess.run([*CLI, "demo", "--seconds", "2", "--capture", "cap", "--host", "sw9"],
                         capture_output=True, text=True, timeout=90, env=clean_env(), cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    records = [json.loads(line) for line in (tmp_path / "cap" / "swssd.capture.jsonl").read_text().splitlines()]
    assert records and {r["host"] for r in records} == {"sw9"}
    assert (tmp_path / "cap" / "_swssd_host").read_text() == "sw9\n"


def test_demo_shows_changes_flowing_and_exits_0() -> None:
    out = subprocess.run([*CLI, "demo", "--seconds", "4"], capture_output=True, text=True, timeout=90, env=clean_env())
    assert out.returncode == 0, out.stderr[-3000:]
    err = out.stderr
    assert "private redis-server" in err
    assert "-> STATE_DB state=ok" in err  # ports mirrored
    assert "installed" in err and "task waits" in err  # routes waited for their ports, then went in
    totals = [line for line in err.splitlines() if "demo totals" in line]
    assert totals and "handled=0" not in totals[0]
    # the first next step works on any machine: the daemon on a private redis-server, no config
    assert any(line.split()[:2] == ["swssd", "run"] and len(line.split()) > 2 and line.split()[2] != "--config"
               for line in err.splitlines()), err[-2000:]


@pytest.mark.skipif(
    os.path.exists(DEFAULT_PATH) or os.path.exists(DEFAULT_CONFIG),
    reason="this machine has a SONiC database_config.json or /etc/swssd config: run would use them",
)
def test_run_without_redis_configured_starts_a_private_one(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([*CLI, "run"], stdout=out, stderr=subprocess.STDOUT, env=clean_env())
        try:
            assert wait_until(lambda: " ready " in log.read_text() or proc.poll() is not None, 60), log.read_text()
            assert proc.poll() is None, log.read_text()
            proc.send_signal(signal.SIGINT)
            assert proc.wait(30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    text = log.read_text()
    assert "no Redis configured: started a private redis-server" in text
    assert "stopped" in text
    # The temp dir of the private redis-server is gone.
    socket_dir = text.split("(unix socket ")[1].split("/redis.sock")[0]
    assert not Path(socket_dir).exists()
