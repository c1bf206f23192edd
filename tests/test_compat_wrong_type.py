"""Keys of the wrong type under the layer's consumers (issue 35 item 10): the binding raises
RuntimeError "Got unexpected result: Input/output error" (RedisTransactioner::exec, a
std::system_error with EIO), which SONiC code catches; the layer raises the same, never a
TypeError. Compared with the binding itself when it is built (SWSSD_SWSSCOMMON_ENV)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from compat_fixtures import sonic_db_config
from swssd.compat import swsscommon
from swssd.compat.redis_command import REDIS_REPLY_INTEGER, RedisCommand
from swssd.compat.redis_transactioner import RedisTransactioner
from test_configdb_interop import swss_env

_ = (sonic_db_config, swss_env)

#: (what is planted, which consumer is made): the same in both processes
CASES = [
    ("ROUTE_TABLE_KEY_SET", "string", "ConsumerStateTable", "ROUTE_TABLE"),
    ("ROUTE_TABLE_KEY_SET", "hash", "ConsumerStateTable", "ROUTE_TABLE"),
    ("Q_TABLE_KEY_VALUE_OP_QUEUE", "hash", "ConsumerTable", "Q_TABLE"),
    ("Q_TABLE_KEY_VALUE_OP_QUEUE", "string", "ConsumerTable", "Q_TABLE"),
]

DRIVER = """
def drive(sc, cases):
    db = sc.DBConnector("APPL_DB", 0, True)
    out = []
    for key, kind, cls, table in cases:
        db.delete(key)
        if kind == "string":
            db.set(key, "x")
        else:
            db.hset(key, "f", "v")
        try:
            getattr(sc, cls)(db, table)
            out.append(("ok", ""))
        except Exception as exc:
            out.append((type(exc).__name__, str(exc)))
    return out
"""
BINDING = DRIVER + """
import ast, sys
from swsscommon import swsscommon as sc
request = ast.literal_eval(sys.stdin.read())
sc.SonicDBConfig.initialize(request["config"])
print(repr(drive(sc, request["cases"])))
"""


def drive_ours(cases: list[tuple[str, str, str, str]]) -> list[tuple[str, str]]:
    namespace: dict[str, object] = {}
    exec(DRIVER, namespace)
    return namespace["drive"](swsscommon, cases)  # type: ignore[operator, no-any-return]


def test_wrong_type_key_set_or_queue_is_the_bindings_runtime_error(sonic_db_config: Path) -> None:
    assert drive_ours(CASES) == [("RuntimeError", "Got unexpected result: Input/output error")] * len(CASES)


def test_a_transactions_wrong_type_reply_is_the_same_runtime_error(sonic_db_config: Path) -> None:
    db = swsscommon.DBConnector("APPL_DB", 0, True)
    db.set("S", "x")
    tran = RedisTransactioner(db)
    tran.multi()
    scard = RedisCommand()
    scard.format(["SCARD", "S"])
    tran.enqueue(scard, REDIS_REPLY_INTEGER)
    with pytest.raises(RuntimeError) as raised:
        tran._exec()
    assert str(raised.value) == "Got unexpected result: Input/output error"


def test_the_binding_raises_the_same(sonic_db_config: Path, swss_env: dict[str, str]) -> None:
    request = {"config": str(sonic_db_config), "cases": CASES}
    done = subprocess.run(
        [swss_env.get("PYTHON", sys.executable), "-c", BINDING],
        input=repr(request), env=swss_env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert ast.literal_eval(done.stdout.strip().splitlines()[-1]) == drive_ours(CASES)
