"""Loading Orch plugins: what is refused before start, and how `swssd run` reports it (exit 3, one line)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from swssd.orch.plugins import PluginError, create, load_class
from swssd.redis.embedded_redis import EmbeddedRedis

_names = itertools.count()

PLUGINS = textwrap.dedent("""
    from swssd import Orch

    class NoHandlerOrch(Orch):
        async def start(self) -> None:
            pass

    class HandleOrch(Orch):
        async def handle(self, table, task) -> None:
            pass

    class BatchOrch(Orch):
        async def handle_batch(self, table, tasks):
            return None

    class InheritedOrch(HandleOrch):
        pass

    class NotAnOrch:
        async def handle(self, table, task) -> None:
            pass

    not_a_class = {"a": 1}
""")


def plugin_module(tmp_path: Path, text: str = PLUGINS) -> str:
    """Write `text` as a module of a fresh name (imports are cached) and return that name."""
    name = f"plugin_mod_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(text)
    return name


@pytest.fixture
def mod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    return plugin_module(tmp_path)


@pytest.mark.parametrize("cls", ["HandleOrch", "BatchOrch", "InheritedOrch"])
def test_a_plugin_with_a_handler_loads(mod: str, cls: str) -> None:
    assert create(f"{mod}:{cls}").name == cls


def test_the_example_entry_points_load() -> None:
    assert load_class("port_mirror").__name__ == "PortMirrorOrch"
    assert load_class("route").__name__ == "RouteOrch"


@pytest.mark.parametrize(("attr", "problem"), [
    ("NoHandlerOrch", "class NoHandlerOrch implements neither handle() nor handle_batch()"),
    ("NotAnOrch", "class NotAnOrch is not a subclass of swssd.orch.Orch"),
    ("not_a_class", "it is a dict, not a subclass of swssd.orch.Orch"),
])
def test_a_plugin_that_cannot_handle_tasks_is_refused(mod: str, attr: str, problem: str) -> None:
    with pytest.raises(PluginError) as err:
        load_class(f"{mod}:{attr}")
    assert str(err.value) == f"plugin '{mod}:{attr}': {problem}"


def test_a_multi_line_import_error_is_reported_on_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    name = plugin_module(tmp_path, 'raise RuntimeError("first line\\n  second line")\n')
    with pytest.raises(PluginError) as err:
        load_class(f"{name}:X")
    assert str(err.value) == (
        f"plugin '{name}:X': cannot import '{name}': RuntimeError: first line second line"
        f" (at {tmp_path / (name + '.py')}, line 1)"
    )


@pytest.mark.parametrize(("code", "line"), [
    ("import json\nCFG = {}['x']\n", 2),           # raised in the plugin's own line
    ("import json\n\nDATA = json.loads('{')\n", 3),  # raised inside the standard library, called from line 3
])
def test_an_import_error_names_the_plugins_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, line: int
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    name = plugin_module(tmp_path, code)
    with pytest.raises(PluginError) as err:
        load_class(f"{name}:X")
    assert str(err.value).endswith(f" (at {tmp_path / (name + '.py')}, line {line})"), err.value


def test_a_failing_constructor_names_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    name = plugin_module(tmp_path, (
        "from swssd import Orch\n\nclass X(Orch):\n    def __init__(self):\n        raise KeyError('cfg')\n"
        "    async def handle(self, table, task):\n        pass\n"
    ))
    with pytest.raises(PluginError) as err:
        create(f"{name}:X")
    assert str(err.value) == f"plugin '{name}:X': X() failed: KeyError: 'cfg' (at {tmp_path / (name + '.py')}, line 5)"


def run_daemon(tmp_path: Path, server: EmbeddedRedis, plugin: str) -> subprocess.CompletedProcess[str]:
    """`swssd run` with one plugin from tmp_path, against the test redis-server."""
    db_config = server.write_database_config(tmp_path / "database_config.json")
    config = tmp_path / "swssd.toml"
    config.write_text(textwrap.dedent(f"""
        [redis]
        database_config = "{db_config}"
        [logging]
        format = "json"
        [[orchs]]
        plugin = "{plugin}"
        tables = [{{db = "APPL_DB", table = "A"}}]
    """))
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("SWSSD_DB_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "swssd.cli", "run", "--config", str(config)],
        capture_output=True, text=True, timeout=60, env=env,
    )


@pytest.mark.parametrize(("attr", "problem"), [
    ("NoHandlerOrch", "class NoHandlerOrch implements neither handle() nor handle_batch()"),
    ("NotAnOrch", "class NotAnOrch is not a subclass of swssd.orch.Orch"),
])
def test_swssd_run_refuses_it_with_exit_3_and_one_line(
    clean_redis: EmbeddedRedis, tmp_path: Path, attr: str, problem: str
) -> None:
    name = plugin_module(tmp_path)
    out = run_daemon(tmp_path, clean_redis, f"{name}:{attr}")
    assert out.returncode == 3, out.stderr
    assert out.stderr.splitlines() == [f"swssd: error: plugin '{name}:{attr}': {problem}"]
    assert out.stdout == ""
