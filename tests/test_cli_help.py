"""The command line as documentation: --version, a description, exit statuses and defaults in every
sub-command's help; `swssd status --config` finding the daemon's endpoint in its config."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from daemon_harness import DaemonProcess, write_config
from swssd.cli import build_parser
from swssd.redis.embedded_redis import EmbeddedRedis, free_port
from swssd.tools.status import normalize_url

CLI = [sys.executable, "-m", "swssd.cli"]


def swssd(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("SWSSD_DB_CONFIG", None)
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=60, env=env)


def subcommands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {name: p for name, p in sub.choices.items() if name != "replay"}


def test_version_is_the_package_version() -> None:
    out = swssd("--version")
    assert out.returncode == 0
    assert out.stdout.strip() == f"swssd {version('swssd')}"


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_command_says_what_it_does_and_how_it_exits(name: str) -> None:
    parser = subcommands()[name]
    assert parser.description and len(parser.description) > 40, name
    assert parser.epilog and parser.epilog.startswith("exit status: 0 "), name
    out = swssd(name, "--help")
    assert out.returncode == 0 and "exit status: 0 " in out.stdout


def replay_subcommands() -> list[str]:
    from swssd.replay.cli import build_parser as build_replay_parser

    sub = next(a for a in build_replay_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


@pytest.mark.parametrize("name", replay_subcommands())
def test_every_replay_command_help_ends_with_its_exit_statuses(name: str) -> None:
    """As the docs say of every help: `swssd replay NAME --help` (the command line a user runs)."""
    out = swssd("replay", name, "--help")
    assert out.returncode == 0, out.stderr
    last = " ".join(out.stdout.rstrip().split("\n\n")[-1].split())
    assert last.startswith("exit status: 0 ") and last.endswith("(one line on stderr)."), out.stdout


def test_defaults_are_shown() -> None:
    assert "(default: 10.0)" in swssd("demo", "--help").stdout
    produce = " ".join(swssd("produce", "--help").stdout.split())
    assert "--batch N keys per batched EVALSHA (default: 128)" in produce
    assert "(default: state)" in produce and "(default: APPL_DB)" in produce
    # no "(default: None)" where there is nothing to show
    for name in subcommands():
        assert "default: None" not in swssd(name, "--help").stdout, name


@pytest.mark.parametrize(("given", "url"), [
    ("127.0.0.1:9750", "http://127.0.0.1:9750/metrics"),
    ("http://[::1]:9000", "http://[::1]:9000/metrics"),
    ("http://host:1/other", "http://host:1/other"),
])
def test_metrics_url_accepts_host_port(given: str, url: str) -> None:
    assert normalize_url(given) == url


def test_status_without_metrics_in_the_config_says_how_to_enable_them(tmp_path: Path) -> None:
    config = tmp_path / "swssd.toml"
    config.write_text('[[orchs]]\nplugin = "route"\ntables = [{table = "ROUTE_TABLE"}]\n')
    out = swssd("status", "--config", config)
    assert out.returncode == 2
    assert out.stderr.strip() == f"swssd status: error: {config}: the daemon serves no metrics: " \
        "set [metrics] enabled = true (and restart it)"


def test_status_config_finds_the_endpoint(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    port = free_port()
    config = write_config(tmp_path, clean_redis, {
        "metrics": {"enabled": True, "address": "127.0.0.1", "port": port},
        "orchs": [{"plugin": "route", "tables": [{"db": "APPL_DB", "table": "ROUTE_TABLE"}],
                   "databases": ["STATE_DB"]}],
    })
    daemon = DaemonProcess(config, tmp_path / "log")
    try:
        daemon.wait_ready()
        out = swssd("status", "--config", config)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "ROUTE_TABLE" in out.stdout and "health: OK" in out.stdout
    finally:
        assert daemon.stop() == 0


def test_demo_says_how_long_it_runs_what_its_totals_mean_and_what_next() -> None:
    out = swssd("demo", "--seconds", "2")
    assert out.returncode == 0, out.stderr[-3000:]
    err = out.stderr
    assert "Runs for 2 seconds (--seconds N to change it; Ctrl-C stops sooner)" in err
    assert "Ctrl-C stops." not in err
    totals = err.index("demo totals")
    legend = err.index("What the totals count:")
    assert totals < legend < err.index("What to try next:")
    for word in ("produced", "handled", "waiting", "retries", "dead_lettered"):
        assert f"\n  {word} " in err[legend:], word
    assert "swssd run --config" in err and "docs/plugins.md" in err
