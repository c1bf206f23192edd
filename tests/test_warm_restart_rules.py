"""swssd/warm_restart.py: WarmStart's rules as the C++ class applies them, and the reconcile timer
read as the real binding's getWarmStartTimer reads it (when $SWSSD_SWSSCOMMON_ENV provides it)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from compat_fixtures import sonic_db_config
from swssd import warm_restart as rules
from swssd.errors import ConfigError
from swssd.orch.config_file import config_from_dict
from swssd.redis.embedded_redis import EmbeddedRedis
from test_configdb_interop import _env_file, _swsscommon_env

_ = sonic_db_config

TIMER_VALUES = ["120", "0x10", "010", "120s", "", "abc", "0", "10000", "9999", "-5", " 7", "+7", "0x", "1e3"]
EXPECTED = [120, 16, 8, 120, 0, 0, 0, 0, 9999, 0, 7, 7, 0, 1]


def test_timer_values_as_strtoul_reads_them() -> None:
    assert [rules.timer_seconds(v) for v in TIMER_VALUES] == EXPECTED
    assert rules.timer_seconds(None) == 0


@pytest.mark.parametrize(("system", "container", "count", "increment", "expected"), [
    (None, None, None, True, (False, False, "0")),
    ("true", None, None, True, (False, False, "0")),  # knob on, no record: the database was flushed
    ("true", None, "3", True, (True, True, "4")),
    (None, "true", "0", True, (True, False, "1")),
    ("TRUE", "false", "3", True, (False, False, "0")),  # exactly "true", as C++ compares
    ("true", None, "3", False, (True, True, None)),  # not counting: the record is left alone
])
def test_check_warm_start(system: str | None, container: str | None, count: str | None, increment: bool,
                          expected: tuple[bool, bool, str | None]) -> None:
    on, by_system = rules.knobs(system, container)
    assert tuple(rules.check_warm_start(on, by_system, count if on else None, increment)) == expected


def test_states_by_name() -> None:
    assert [rules.state_of(n) for n in rules.STATE_NAMES] == list(range(6))
    assert rules.state_of("frozen") == rules.state_of(None) == rules.WSUNKNOWN


def test_the_binding_reads_the_timer_alike(clean_redis: EmbeddedRedis, sonic_db_config: Path) -> None:
    env = _swsscommon_env()
    if env is None or _env_file() is None:
        pytest.skip("no built swsscommon binding ($SWSSD_SWSSCOMMON_ENV)")
    config_db = redis.Redis(unix_socket_path=clean_redis.unix_socket, db=4, decode_responses=True)
    for i, value in enumerate(TIMER_VALUES):
        config_db.hset("WARM_RESTART|swss", f"app{i}_timer", value)
    script = (
        "import sys\nfrom swsscommon import swsscommon\nswsscommon.SonicDBConfig.initialize(sys.argv[1])\n"
        "swsscommon.WarmStart.initialize('app0', 'swss')\n"
        f"print([swsscommon.WarmStart.getWarmStartTimer(f'app{{i}}', 'swss') for i in range({len(TIMER_VALUES)})])\n"
    )
    done = subprocess.run([env.get("PYTHON", sys.executable), "-c", script, str(sonic_db_config)],
                          env=env, capture_output=True, text=True, timeout=60)
    if done.returncode != 0 and "No module named" in done.stderr:
        pytest.skip(f"swsscommon's binding not importable: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr
    assert ast.literal_eval(done.stdout.strip().splitlines()[-1]) == EXPECTED


@pytest.mark.parametrize(("section", "field"), [
    ({"app": "two words"}, "warm_restart.app"),
    ({"container": "swss"}, "warm_restart.app"),
    ({"app": "a", "default_timer": 0}, "warm_restart.default_timer"),
    ({"app": "a", "timer": 5}, "warm_restart.timer"),
])
def test_warm_restart_config_mistakes_name_the_field(section: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict({"warm_restart": section, "orchs": [{"plugin": "x:Y", "tables": [{"table": "T"}]}]})
    assert err.value.field == field


def test_warm_restart_config_defaults() -> None:
    orchs = [{"plugin": "x:Y", "tables": [{"table": "T"}]}]
    config = config_from_dict({"warm_restart": {"app": "routes"}, "orchs": orchs})
    assert config.warm_restart is not None
    assert (config.warm_restart.container, config.warm_restart.default_timer) == ("swss", 120.0)
