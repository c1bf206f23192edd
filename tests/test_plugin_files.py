"""Plugins as a new user writes them: docs/plugins.md's complete example, as written there, beside
its config (`module:Class` found through the config's directory), `file.py:Class` specs, and
`swssd check` catching a broken config (exit 2) and a broken plugin (exit 3)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from daemon_harness import DaemonProcess
from swssd import DBConnector, ProducerStateTable, Table
from swssd.orch.config_file import load_config
from swssd.orch.plugins import PluginError, load_class, use_config_dir
from swssd.redis.embedded_redis import EmbeddedRedis

PAGE = Path(__file__).resolve().parent.parent / "docs" / "plugins.md"
CLI = [sys.executable, "-m", "swssd.cli"]


def page_block(language: str, marker: str) -> str:
    """The page's fenced `language` block that contains `marker`."""
    blocks = re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), re.S)
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, f"{PAGE.name}: {len(found)} {language} blocks contain {marker!r}"
    return found[0]


def plugin_source() -> str:
    return page_block("python", "class RouteMirrorOrch(Orch)")


def write_example(directory: Path, server: EmbeddedRedis) -> Path:
    """mirror_orch.py and swssd.toml from the page, the config given the test redis-server."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "mirror_orch.py").write_text(plugin_source())
    db_config = server.write_database_config(directory / "database_config.json")
    toml = page_block("toml", 'plugin = "mirror_orch:RouteMirrorOrch"')
    assert "[redis]" not in toml  # the page's config names no Redis: one is added here
    config = directory / "swssd.toml"
    config.write_text(f'[redis]\ndatabase_config = "{db_config}"\n\n{toml}\n[logging]\nformat = "json"\n')
    return config


def clean_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SWSSD_DB_CONFIG", None)
    env.pop("PYTHONPATH", None)
    env.update(extra)
    return env


def swssd(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=60,
                          env=clean_env(), cwd=cwd)


def test_readme_plugin_test_passes(tmp_path: Path) -> None:
    """With swssd's pytest plugin (its fixtures) and nothing else: no conftest, no config."""
    (tmp_path / "mirror_orch.py").write_text(plugin_source())
    test = page_block("python", "def test_a_route_waits_for_its_port")
    (tmp_path / "test_mirror_orch.py").write_text(test)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "test_mirror_orch.py"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=clean_env(),
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert f"{test.count(chr(10) + 'async def test_')} passed" in out.stdout


async def test_readme_plugin_runs_beside_its_config(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    config = write_example(tmp_path / "etc", clean_redis)
    # The daemon's working directory is elsewhere and PYTHONPATH does not name the config's.
    daemon = DaemonProcess(config, tmp_path / "log")
    appl = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
    state = await DBConnector.from_url(clean_redis.url, db_id=6, separator="|", name="STATE_DB")
    try:
        daemon.wait_ready()
        await Table(state, "EXAMPLE_PORT_TABLE").set("Ethernet0", {"state": "ok"})
        route = {"nexthop": "10.0.0.1", "ifname": "Ethernet0"}
        await ProducerStateTable(appl, "EXAMPLE_ROUTE_TABLE").set("10.1.0.0/24", route)
        mirror = Table(state, "EXAMPLE_ROUTE_MIRROR")
        for _ in range(500):
            if await mirror.hget("10.1.0.0/24", "nexthop") == "10.0.0.1":
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError(f"route not mirrored:\n{(tmp_path / 'log').read_text()[-3000:]}")
        mirrored = daemon.wait_for_log("route mirrored", 10)  # logged after the write
        assert mirrored and mirrored[0]["orch"] == "route-mirror" and mirrored[0]["prefix"] == "10.1.0.0/24"
    finally:
        code = daemon.stop()
        await appl.close()
        await state.close()
    assert code == 0


def test_check_accepts_the_readme_example(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    config = write_example(tmp_path, clean_redis)
    out = swssd("check", "--config", config, cwd=tmp_path.parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "route-mirror: RouteMirrorOrch consumes APPL_DB EXAMPLE_ROUTE_TABLE (state)",
        f"{config}: OK",
    ]


FILE_PLUGIN = textwrap.dedent("""
    from helper import PREFIX  # a module beside the plugin file

    from swssd import KeyOpFieldsValues, Orch


    class FileOrch(Orch):
        async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
            self.log.info(PREFIX + task.key)
""")


def file_plugin(tmp_path: Path, server: EmbeddedRedis, spec: str) -> Path:
    plugin_dir = tmp_path / "plugins" / "sub"
    plugin_dir.mkdir(parents=True)
    (plugin_dir / "file_orch.py").write_text(FILE_PLUGIN)
    (plugin_dir / "helper.py").write_text('PREFIX = "saw "\n')
    db_config = server.write_database_config(tmp_path / "database_config.json")
    config = tmp_path / "swssd.toml"
    config.write_text(textwrap.dedent(f"""
        [redis]
        database_config = "{db_config}"
        [[orchs]]
        plugin = "{spec}"
        tables = [{{db = "APPL_DB", table = "A"}}]
    """))
    return config


def test_a_file_spec_is_relative_to_the_config(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    config = file_plugin(tmp_path, clean_redis, "plugins/sub/file_orch.py:FileOrch")
    out = swssd("check", "--config", config, cwd=Path("/"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "plugins/sub/file_orch.py:FileOrch: FileOrch consumes APPL_DB A (state)"


def test_use_config_dir_keeps_the_written_spec_as_the_name(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    config = load_config(file_plugin(tmp_path, clean_redis, "plugins/sub/file_orch.py:FileOrch"))
    use_config_dir(config)
    orch = config.orchs[0]
    assert orch.name == "plugins/sub/file_orch.py:FileOrch"
    assert orch.plugin == f"{tmp_path.resolve()}/plugins/sub/file_orch.py:FileOrch"
    cls = load_class(orch.plugin)
    assert cls.__name__ == "FileOrch" and cls.__module__.startswith("_swssd_plugin_file_orch")
    assert load_class(orch.plugin) is cls  # one import per file


def test_a_missing_file_or_module_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(PluginError, match=r"no such file '.*/nowhere\.py'"):
        load_class(f"{tmp_path}/nowhere.py:X")
    where = r"cannot import 'no_such_plugin_mod': no module of that name on the import path \(the config file's"
    with pytest.raises(PluginError, match=where):
        load_class("no_such_plugin_mod:X")


@pytest.mark.parametrize(("text", "problem"), [
    ("[[orchs]]\nplugin = 'mirror_orch:RouteMirrorOrch'\n", "field 'orchs.0.tables': Field required"),
    ("[[orchs]\n", "not valid TOML"),
    ('[[orchs]]\nplugin = "mirror_orch:RouteMirrorOrch"\ntables = [{db = "NO_DB", table = "A"}]\n',
     "orchs.0.tables.0.db"),
])
def test_check_catches_a_broken_config_with_exit_2(
    clean_redis: EmbeddedRedis, tmp_path: Path, text: str, problem: str
) -> None:
    write_example(tmp_path, clean_redis)
    config = tmp_path / "broken.toml"
    db_config = tmp_path / "database_config.json"
    config.write_text(f'[redis]\ndatabase_config = "{db_config}"\n{text}')
    out = swssd("check", "--config", config)
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.splitlines()) == 1 and out.stderr.startswith("swssd check: error: ")
    assert problem in out.stderr


@pytest.mark.parametrize(("source", "spec", "problem"), [
    ("import no_such_dependency\n", "bad_orch:X", "cannot import 'bad_orch': ModuleNotFoundError"),
    ("from swssd import Orch\nclass X(Orch):\n    pass\n", "bad_orch:X", "implements neither handle()"),
    ("from swssd import Orch\n", "bad_orch:Missing", "module 'bad_orch' has no 'Missing'"),
    ("from swssd import Orch\nclass X(Orch):\n    def __init__(self):\n        raise ValueError('no')\n"
     "    async def handle(self, table, task):\n        pass\n", "bad_orch.py:X", "X() failed: ValueError: no"),
    # the compiler's error is located in the plugin file, not in importlib
    ("from swssd import Orch\n\nclass X(Orch)\n    pass\n", "bad_orch:X", "/bad_orch.py, line 3)"),
    ("from swssd import Orch\n\nclass X(Orch)\n    pass\n", "bad_orch.py:X", "/bad_orch.py, line 3)"),
])
def test_check_catches_a_broken_plugin_with_exit_3(
    clean_redis: EmbeddedRedis, tmp_path: Path, source: str, spec: str, problem: str
) -> None:
    config = write_example(tmp_path, clean_redis)
    (tmp_path / "bad_orch.py").write_text(source)
    config.write_text(config.read_text().replace("mirror_orch:RouteMirrorOrch", spec))
    out = swssd("check", "--config", config)
    assert out.returncode == 3, out.stderr
    assert len(out.stderr.splitlines()) == 1 and out.stderr.startswith("swssd check: error: plugin ")
    assert problem in out.stderr


def test_check_warns_as_run_would_about_a_key_set_table_on_state_db(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    config = write_example(tmp_path, clean_redis)
    config.write_text(config.read_text().replace('db = "APPL_DB"', 'db = "STATE_DB"'))
    out = swssd("check", "--config", config)
    assert out.returncode == 0, out.stderr
    assert 'warning: orchs.0.tables.0: STATE_DB EXAMPLE_ROUTE_TABLE is a key-set table (kind "state")' in out.stdout


def test_check_warns_about_a_stall_after_shorter_than_the_handler_timeout(
    clean_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    """A table's stall_after under its handler_timeout would call one honest long handler call
    a stall: `swssd check` says so, naming the table and both figures; the default is quiet."""
    config = write_example(tmp_path, clean_redis)
    assert "stall_after" not in swssd("check", "--config", config).stdout
    config.write_text(config.read_text() + "[daemon]\nstall_after = 5\n[retry]\nhandler_timeout = 12\n")
    out = swssd("check", "--config", config)
    assert out.returncode == 0, out.stderr
    warned = [line for line in out.stdout.splitlines() if "stall_after" in line]
    assert warned == ["warning: orchs[0].tables[0] (APPL_DB EXAMPLE_ROUTE_TABLE): stall_after 5 s is shorter "
                      "than handler_timeout 12 s: a handler call that takes longer than 5 s is reported as a "
                      "stall"], out.stdout


def test_plugin_path_directories_are_searched_in_order(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    """`plugin_path` (relative to the config) finds a module by name in a directory of its own,
    after the config's directory; `swssd check` loads it from there, with cwd and PYTHONPATH
    elsewhere."""
    site = tmp_path / "site-plugins"
    site.mkdir()
    (site / "site_orch.py").write_text(FILE_PLUGIN.replace("from helper import PREFIX", 'PREFIX = "site "'))
    config = file_plugin(tmp_path / "etc", clean_redis, "site_orch:FileOrch")
    config.write_text('plugin_path = ["../site-plugins"]\n' + config.read_text())
    out = swssd("check", "--config", config, cwd=Path("/"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "site_orch:FileOrch: FileOrch consumes APPL_DB A (state)"
    loaded = load_config(config)
    assert loaded.plugin_path == [(tmp_path / "etc" / "../site-plugins")]


def test_a_plugin_path_others_may_write_is_warned_about_by_check_and_run(
    clean_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    """Issue 25: a group/world-writable plugin_path directory gets one warning naming it, from
    `swssd check` and from `swssd run` alike; the daemon runs on."""
    site = tmp_path / "site-plugins"
    site.mkdir()
    (site / "site_orch.py").write_text(FILE_PLUGIN.replace("from helper import PREFIX", 'PREFIX = "site "'))
    config = file_plugin(tmp_path / "etc", clean_redis, "site_orch:FileOrch")
    config.write_text('plugin_path = ["../site-plugins"]\n' + config.read_text() + '[logging]\nformat = "json"\n')
    site.chmod(0o777)
    try:
        out = swssd("check", "--config", config)
        assert out.returncode == 0, out.stderr
        warned = [line for line in out.stdout.splitlines() if line.startswith("warning: plugin code")]
        assert len(warned) == 1 and "site-plugins, a directory" in warned[0] and "0777" in warned[0], out.stdout
        daemon = DaemonProcess(config, tmp_path / "log")
        try:
            daemon.wait_ready()
            lines = [e for e in daemon.logs() if str(e.get("event", "")).startswith("plugin code is read from")]
            assert len(lines) == 1 and "site-plugins" in lines[0]["event"] and lines[0]["level"] == "warning"
        finally:
            assert daemon.stop() == 0
    finally:
        site.chmod(0o700)


def test_a_plugin_path_that_is_not_a_directory_is_exit_2(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    config = file_plugin(tmp_path, clean_redis, "site_orch:FileOrch")
    config.write_text('plugin_path = ["nowhere"]\n' + config.read_text())
    out = swssd("check", "--config", config)
    assert out.returncode == 2
    assert "plugin_path.0" in out.stderr and "is not a directory" in out.stderr and "Traceback" not in out.stderr


def test_an_entry_point_comes_from_an_installed_distribution_only(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    """A *.dist-info folder planted beside the config names its own module for `port_mirror`:
    the installed example plugin is loaded, the planted module is never imported."""
    dist = tmp_path / "evil-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[swssd.orchs]\nport_mirror = evil_mod:Evil\n")
    (tmp_path / "evil_mod.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\nEvil = None\n")
    db_config = clean_redis.write_database_config(tmp_path / "database_config.json")
    config = tmp_path / "swssd.toml"
    config.write_text(f'[redis]\ndatabase_config = "{db_config}"\n[[orchs]]\nplugin = "port_mirror"\n'
                      'tables = [{db = "APPL_DB", table = "A"}]\n')
    out = swssd("check", "--config", config, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "PortMirrorOrch" in out.stdout
    assert not (tmp_path / "ran").exists(), "the planted module ran"


def test_plugin_code_others_may_write_is_warned_about(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    config = file_plugin(tmp_path, clean_redis, "plugins/sub/file_orch.py:FileOrch")
    plugin = tmp_path / "plugins" / "sub" / "file_orch.py"
    assert swssd("check", "--config", config).stdout.count("warning:") == 0
    tmp_path.chmod(0o777)
    plugin.chmod(0o666)
    try:
        out = swssd("check", "--config", config)
    finally:
        tmp_path.chmod(0o700)
    assert out.returncode == 0, out.stderr
    warned = [line for line in out.stdout.splitlines() if line.startswith("warning: plugin code")]
    assert len(warned) == 2, out.stdout
    assert f"{tmp_path}, a directory" in warned[0] and "0777" in warned[0]
    assert f"{plugin}, a file" in warned[1] and "0666" in warned[1]
