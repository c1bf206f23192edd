"""The daemon's TOML config: the shipped example validates; every error names the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from swssd.cli import EXIT_CONFIG, main
from swssd.errors import ConfigError
from swssd.orch.config_file import load_config
from swssd.orch.plugins import PluginError, load_class

REPO = Path(__file__).resolve().parent.parent

GOOD = """
[redis]
url = "redis://127.0.0.1:6379"
[[orchs]]
plugin = "port_mirror"
tables = [{table = "PORT_TABLE"}]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "swssd.toml"
    path.write_text(text)
    return path


def error_of(tmp_path: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    return info.value


def test_the_shipped_example_config_is_valid() -> None:
    config = load_config(REPO / "config" / "swssd.toml")
    assert config.redis.database_config == REPO / "config" / "database_config.json"
    assert [o.display_name for o in config.orchs] == ["ports", "routes"]
    assert config.retry_for(config.orchs[1]).retry_interval == 0.5
    assert config.retry_for(config.orchs[0]).retry_interval == config.retry.retry_interval
    for orch in config.orchs:
        load_class(orch.plugin)


def test_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD))
    t = config.orchs[0].tables[0]
    assert (t.db, t.kind, t.pop_batch_size, t.priority, t.reconcile) == ("APPL_DB", "state", 128, 0, False)
    assert config.logging.format == "console" and config.capture.enabled is False


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        (GOOD.replace('table = "PORT_TABLE"', 'table = "P", kind = "stream"'), "orchs.0.tables.0.kind",
         "'state', 'queue', 'subscriber', 'notification' or 'zmq'"),
        (GOOD.replace('table = "PORT_TABLE"', 'table = "P", pop_batch_size = 0'), "orchs.0.tables.0.pop_batch_size",
         "greater than or equal to 1"),
        (GOOD.replace('table = "PORT_TABLE"', 'tabel = "P"'), "orchs.0.tables.0.table", "required"),
        (GOOD + "[retry]\nmax_attempts = 0\n", "retry.max_attempts", "greater than or equal to 1"),
        (GOOD + "[daemon]\nshutdown_timout = 3\n", "daemon.shutdown_timout", "Extra inputs"),
        (GOOD.replace('url = "redis://127.0.0.1:6379"', 'url = "redis://x"\ndatabase_config = "d.json"'), "redis",
         "not both"),
        (GOOD + '[logging]\nlevel = "loud"\n', "logging.level", "'debug'"),
        ('[redis]\nurl = "redis://x"\n', "orchs", "required"),
        (GOOD + '[[orchs]]\nplugin = "route"\ntables = [{table = "PORT_TABLE"}]\n', "orchs.1.tables.0.table",
         "already consumed by orchs.0"),
        (GOOD.replace('{table = "PORT_TABLE"}', '{table = "A"}, {table = "A", db = "STATE_DB"}'),
         "orchs.0.tables.1.table", "listed twice"),
    ],
)
def test_errors_name_file_and_field(tmp_path: Path, text: str, field: str, words: str) -> None:
    err = error_of(tmp_path, text)
    assert err.path == str(tmp_path / "swssd.toml")
    assert err.field == field
    assert words in err.problem
    assert "\n" not in str(err)


def test_toml_syntax_error_names_the_file(tmp_path: Path) -> None:
    err = error_of(tmp_path, "[redis\n")
    assert err.path == str(tmp_path / "swssd.toml") and "not valid TOML" in str(err) and "line 1" in str(err)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "nope.toml")


def test_relative_paths_are_relative_to_the_config_file(tmp_path: Path) -> None:
    text = GOOD.replace('url = "redis://127.0.0.1:6379"', 'database_config = "db/database_config.json"')
    config = load_config(write(tmp_path, text + '[capture]\ndirectory = "cap"\n'))
    assert config.redis.database_config == tmp_path / "db" / "database_config.json"
    assert config.capture.directory == tmp_path / "cap"


def test_cli_prints_one_line_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD.replace('table = "PORT_TABLE"', 'table = "P", priority = "high"'))
    assert main(["run", "--config", str(path)]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"swssd: error: {path}: field 'orchs.0.tables.0.priority':")


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("no_such_module_xyz:Orch", "cannot import 'no_such_module_xyz'"),
        ("swssd.orch.examples.route:Nope", "has no 'Nope'"),
        ("swssd.fields:KeyOpFieldsValues", "is not a subclass of swssd.orch.Orch"),
        ("not_an_entry_point", "no entry point of that name in group 'swssd.orchs'"),
    ],
)
def test_plugin_errors_name_the_plugin(spec: str, words: str) -> None:
    with pytest.raises(PluginError) as info:
        load_class(spec)
    assert str(info.value).startswith(f"plugin {spec!r}: ") and words in str(info.value)


def test_entry_points_of_the_examples() -> None:
    assert load_class("port_mirror").__name__ == "PortMirrorOrch"
    assert load_class("route").__name__ == "RouteOrch"


def test_a_misspelt_key_is_named_with_the_orch_it_is_in(tmp_path: Path) -> None:
    text = GOOD + '[[orchs]]\nplugin = "route"\nname = "routes2"\ntabels = [{table = "R"}]\n'
    err = error_of(tmp_path, text)
    assert "unknown key 'tabels' (did you mean 'tables'?)" in err.problem
    assert "'routes2'" in err.problem
    err = error_of(tmp_path, GOOD.replace('table = "PORT_TABLE"', 'table = "P", prioritty = 3'))
    assert err.field == "orchs.0.tables.0.prioritty" and "did you mean 'priority'?" in err.problem


@pytest.mark.parametrize(("value", "words"), [("0", "greater than or equal to 1"), ("101", "less than or equal to 100"),
                                              ("2.5", "valid integer")])
def test_set_aside_after_crashes_is_checked(tmp_path: Path, value: str, words: str) -> None:
    """The crash-loop guard's count (issue 34): 3 by default, a bad value names the field."""
    assert load_config(write(tmp_path, GOOD)).daemon.set_aside_after_crashes == 3
    exc = error_of(tmp_path, f"[daemon]\nset_aside_after_crashes = {value}\n" + GOOD)
    assert exc.field == "daemon.set_aside_after_crashes" and words in str(exc), str(exc)
