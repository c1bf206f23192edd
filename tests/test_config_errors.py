"""Every bad config or config-named file stops `swssd run` with exit 2 and exactly one line on stderr
(naming the file and the field), never a traceback; bounds on every number in the config."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from swssd.orch.config import MAX_POP_BATCH_SIZE, MAX_SECONDS
from swssd.orch.config_file import config_from_dict

ORCH = '[[orchs]]\nplugin = "orch_plugins:RecordingOrch"\ntables = [{table = "T"%s}]\n'
TESTS_DIR = Path(__file__).resolve().parent

# Each case: (name, the config's text (may use {tmp}), a setup of tmp, what the one line must say).
Setup = Callable[[Path], object]


def _nothing(tmp: Path) -> None:
    pass


def _dir(name: str) -> Setup:
    return lambda tmp: (tmp / name).mkdir()


def _file(name: str) -> Setup:
    return lambda tmp: (tmp / name).write_text("x\n")


def _symlink(name: str) -> Setup:
    def make(tmp: Path) -> None:
        (tmp / "victim").write_text("untouched\n")
        (tmp / name).symlink_to(tmp / "victim")
    return make


REDIS = '[redis]\nurl = "redis://127.0.0.1:1"\n'
CASES: list[tuple[str, str, Setup, str]] = [
    ("batch 1e23", REDIS + ORCH % ", pop_batch_size = 99999999999999999999999", _nothing,
     "field 'orchs.0.tables.0.pop_batch_size': Input should be less than or equal to 100000"),
    ("batch i64 max", REDIS + ORCH % ", pop_batch_size = 9223372036854775807", _nothing,
     "field 'orchs.0.tables.0.pop_batch_size'"),
    ("batch 0", REDIS + ORCH % ", pop_batch_size = 0", _nothing, "pop_batch_size"),
    ("priority 2**40", REDIS + ORCH % ", priority = 1099511627776", _nothing, "orchs.0.tables.0.priority"),
    ("table pending_limit", REDIS + ORCH % ", pending_limit = 1000000000000", _nothing, "pending_limit"),
    ("health inf", REDIS + "[daemon]\nhealth_interval = inf\n" + ORCH % "", _nothing,
     "field 'daemon.health_interval': Input should be a finite number"),
    ("shutdown nan", REDIS + "[daemon]\nshutdown_timeout = nan\n" + ORCH % "", _nothing,
     "field 'daemon.shutdown_timeout': Input should be a finite number"),
    ("shutdown huge", REDIS + "[daemon]\nshutdown_timeout = 1e300\n" + ORCH % "", _nothing,
     "daemon.shutdown_timeout"),
    ("daemon pending_limit", REDIS + "[daemon]\npending_limit = 99999999999999999999\n" + ORCH % "", _nothing,
     "daemon.pending_limit"),
    ("starvation", REDIS + "[daemon]\nstarvation_limit = 0\n" + ORCH % "", _nothing, "daemon.starvation_limit"),
    ("stall_after 0", REDIS + "[daemon]\nstall_after = 0\n" + ORCH % "", _nothing,
     "field 'daemon.stall_after': Input should be greater than 0"),
    ("table stall_after text", REDIS + ORCH % ', stall_after = "5m"', _nothing,
     "field 'orchs.0.tables.0.stall_after': Input should be a valid number"),
    ("table stall_after inf", REDIS + ORCH % ", stall_after = inf", _nothing, "orchs.0.tables.0.stall_after"),
    ("retry inf", REDIS + "[retry]\nhandler_timeout = inf\n" + ORCH % "", _nothing, "retry.handler_timeout"),
    ("retry -inf", REDIS + "[retry]\nbackoff_max = -inf\n" + ORCH % "", _nothing, "retry.backoff_max"),
    ("attempts", REDIS + "[retry]\nmax_attempts = 9223372036854775807\n" + ORCH % "", _nothing,
     "retry.max_attempts"),
    ("orch retry nan", REDIS + ORCH % "" + "retry = {retry_interval = nan}\n", _nothing,
     "orchs.0.retry.retry_interval"),
    ("redis timeout inf", REDIS + "connect_timeout = inf\n" + ORCH % "", _nothing, "redis.connect_timeout"),
    ("redis probe nan", REDIS + "probe_interval = nan\n" + ORCH % "", _nothing, "redis.probe_interval"),
    ("capture max_bytes", REDIS + "[capture]\nmax_bytes = -1\n" + ORCH % "", _nothing, "capture.max_bytes"),
    ("capture retry inf", REDIS + "[capture]\nretry_interval = inf\n" + ORCH % "", _nothing,
     "capture.retry_interval"),
    ("metrics port", REDIS + "[metrics]\nport = 70000\n" + ORCH % "", _nothing, "metrics.port"),
    ("http url", '[redis]\nurl = "http://127.0.0.1:6379"\n' + ORCH % "", _nothing, "field 'redis.url'"),
    ("log file is a directory", REDIS + '[logging]\nfile = "{tmp}/logs"\n' + ORCH % "", _dir("logs"),
     "field 'logging.file': {tmp}/logs is a directory"),
    ("log file is a symlink", REDIS + '[logging]\nfile = "{tmp}/swssd.log"\n' + ORCH % "", _symlink("swssd.log"),
     "field 'logging.file': cannot open the log file: {tmp}/swssd.log is a symbolic link; swssd does not follow it"),
    ("log file under a file", REDIS + '[logging]\nfile = "{tmp}/f/swssd.log"\n' + ORCH % "", _file("f"),
     "field 'logging.file': cannot open the log file: {tmp}/f/swssd.log: Not a directory"),
    ("capture directory is a file", REDIS + '[capture]\nenabled = true\ndirectory = "{tmp}/cap"\n' + ORCH % "",
     _file("cap"), "field 'capture.directory': {tmp}/cap is not a directory"),
    ("not TOML", "[daemon\n", _nothing, "not valid TOML"),
    ("unknown field", REDIS + "[daemon]\nhealth = 1\n" + ORCH % "", _nothing, "daemon.health"),
]


@pytest.mark.parametrize(("text", "setup", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_config_is_one_line_and_exit_2(tmp_path: Path, text: str, setup: Setup, expected: str) -> None:
    setup(tmp_path)
    config = tmp_path / "swssd.toml"
    config.write_text(text.replace("{tmp}", str(tmp_path)))
    result = run(config)
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert lines[0].startswith(f"swssd: error: {config}: ")
    assert expected.replace("{tmp}", str(tmp_path)) in lines[0]
    if (tmp_path / "victim").exists():
        assert (tmp_path / "victim").read_text() == "untouched\n"


@pytest.mark.parametrize("where", ["missing", "directory"])
def test_config_file_that_cannot_be_read_is_one_line_and_exit_2(tmp_path: Path, where: str) -> None:
    config = tmp_path / "swssd.toml"
    if where == "directory":
        config.mkdir()
    result = run(config)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert f"{config}: cannot read config" in result.stderr


def run(config: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS_DIR), env.get("PYTHONPATH")]))
    for name in ("SWSSD_DB_CONFIG", "SWSSD_REDIS_PASSWORD", "CREDENTIALS_DIRECTORY", "JOURNAL_STREAM"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "swssd.cli", "run", "--config", str(config)],
                          capture_output=True, text=True, timeout=60, env=env)


def test_bounds_accept_their_limits() -> None:
    """The documented maxima themselves load; one past them does not."""
    doc = {
        "orchs": [{"plugin": "p", "tables": [{"table": "T", "pop_batch_size": MAX_POP_BATCH_SIZE}]}],
        "daemon": {"shutdown_timeout": MAX_SECONDS, "health_interval": 0.001},
    }
    config = config_from_dict(doc)
    assert config.orchs[0].tables[0].pop_batch_size == MAX_POP_BATCH_SIZE
    doc["orchs"][0]["tables"][0]["pop_batch_size"] = MAX_POP_BATCH_SIZE + 1  # type: ignore[index]
    with pytest.raises(ValueError, match="pop_batch_size"):
        config_from_dict(doc)
