"""`swssd run` as a real subprocess against the test redis-server, with the plugins of orch_plugins.py.

The daemon reaches Redis over the unix socket, the tests over TCP, so the daemon's own
connections can be told apart (and killed) in CLIENT LIST.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from daemon_harness import DaemonProcess, State, check_values_advance, fold, read_records, wait_until, write_config
from swssd import DBConnector, ProducerStateTable, ProducerTable
from swssd.redis.embedded_redis import EmbeddedRedis

FIELDS = [f"f{i}" for i in range(6)]


@dataclass
class Stream:
    """Random traffic on several tables, and the consumer-side state it must lead to."""

    tables: dict[str, ProducerStateTable | ProducerTable]
    keys: dict[str, int]
    model: State = field(default_factory=dict)
    rng: random.Random = field(default_factory=lambda: random.Random(1234))
    seq: itertools.count[int] = field(default_factory=itertools.count)
    produced: int = 0

    def _fvs(self, fields: Sequence[str]) -> list[tuple[str, str]]:
        return [(f, f"v{next(self.seq)}") for f in fields]

    async def _set(self, table: str, key: str, fvs: list[tuple[str, str]]) -> None:
        await self.tables[table].set(key, fvs)
        self.model.setdefault((table, key), {}).update(fvs)
        self.produced += 1

    async def _del(self, table: str, key: str) -> None:
        await self.tables[table].delete(key)
        self.model.pop((table, key), None)
        self.produced += 1

    async def flush(self) -> None:
        for producer in self.tables.values():
            await producer.flush()

    async def fill(self, chunk: int = 500) -> None:
        """Every key of every table, with four fields."""
        for table, n in self.keys.items():
            for i in range(n):
                await self._set(table, f"k{i}", self._fvs(FIELDS[:4]))
                if i % chunk == chunk - 1:
                    await self.flush()
        await self.flush()

    async def churn(self, ops: int, chunk: int = 250, pause: float = 0.0) -> None:
        """Updates of random fields, deletes, and delete-then-set of random keys."""
        names = list(self.keys)
        for i in range(ops):
            table = self.rng.choice(names)
            key = f"k{self.rng.randrange(self.keys[table])}"
            r = self.rng.random()
            if r < 0.55:
                await self._set(table, key, self._fvs(self.rng.sample(FIELDS, self.rng.randint(1, 3))))
            elif r < 0.8:
                await self._del(table, key)
            else:
                await self._del(table, key)
                await self._set(table, key, self._fvs(self.rng.sample(FIELDS, 2)))
            if i % chunk == chunk - 1:
                await self.flush()
                if pause:
                    await asyncio.sleep(pause)
        await self.flush()


async def wait_for_model(records_path: Path, model: State, daemon: DaemonProcess, timeout: float = 90.0) -> list:
    """Until the handled tasks fold to the model (or fail with the difference)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        records = read_records(records_path)
        state = fold(records)
        if state == model:
            return records
        if loop.time() > deadline or daemon.proc.poll() is not None:
            missing = [k for k in model if state.get(k) != model[k]]
            extra = [k for k in state if k not in model]
            raise AssertionError(
                f"{len(missing)} keys differ, {len(extra)} extra; e.g. {missing[:3]} {extra[:3]}; "
                f"exit={daemon.proc.poll()}\n{daemon.log_path.read_text()[-2000:]}"
            )
        await asyncio.sleep(0.3)


@pytest.fixture
async def appl(clean_redis: EmbeddedRedis):
    db = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
    yield db
    await db.close()


@pytest.fixture
async def state_db(clean_redis: EmbeddedRedis):
    db = await DBConnector.from_url(clean_redis.url, db_id=6, separator="|", name="STATE_DB")
    yield db
    await db.close()


def recording(record: Path, tables: list[dict], plugin: str = "orch_plugins:RecordingOrch", **options) -> dict:
    return {"plugin": plugin, "tables": tables, "options": {"record": str(record), **options}}


def stream_config(records: Path, pending_limit: int = 20000) -> dict:
    return {
        "daemon": {"pending_limit": pending_limit, "shutdown_timeout": 20.0},
        "orchs": [
            recording(records, [
                {"db": "APPL_DB", "table": "STREAM_A", "priority": 2},
                {"db": "APPL_DB", "table": "STREAM_B", "priority": 1, "pop_batch_size": 64},
                {"db": "APPL_DB", "table": "STREAM_C"},
            ]),
            recording(records, [{"db": "STATE_DB", "table": "STREAM_D", "kind": "state", "pop_batch_size": 256}],
                      plugin="orch_plugins:BatchRecordingOrch"),
            recording(records, [{"db": "APPL_DB", "table": "STREAM_Q", "kind": "queue"}]),
        ],
    }


def stream_tables(appl: DBConnector, state_db: DBConnector) -> dict:
    return {
        "STREAM_A": ProducerStateTable(appl, "STREAM_A", buffered=True),
        "STREAM_B": ProducerStateTable(appl, "STREAM_B", buffered=True),
        "STREAM_C": ProducerStateTable(appl, "STREAM_C", buffered=True),
        "STREAM_D": ProducerStateTable(state_db, "STREAM_D", buffered=True),
        "STREAM_Q": ProducerTable(appl, "STREAM_Q", buffered=True),
    }


STREAM_KEYS = {"STREAM_A": 5000, "STREAM_B": 5000, "STREAM_C": 4000, "STREAM_D": 4000, "STREAM_Q": 2000}


async def test_stream_of_20000_keys_reaches_handlers_with_merge_semantics(
    clean_redis: EmbeddedRedis, appl: DBConnector, state_db: DBConnector, tmp_path: Path
) -> None:
    records_path = tmp_path / "records.jsonl"
    daemon = DaemonProcess(write_config(tmp_path, clean_redis, stream_config(records_path)), tmp_path / "log")
    try:
        daemon.wait_ready()
        stream = Stream(stream_tables(appl, state_db), STREAM_KEYS)
        await stream.fill()
        await stream.churn(6000)
        records = await wait_for_model(records_path, stream.model, daemon)
        check_values_advance(records)
        # Merging only ever folds tasks together: never more handled than produced.
        assert len(records) <= stream.produced
        assert {r[0] for r in records} == set(STREAM_KEYS)
        # Nothing left behind in Redis.
        for table in ("STREAM_A", "STREAM_B", "STREAM_C"):
            assert await appl.redis.scard(f"{table}_KEY_SET") == 0
        assert await state_db.redis.scard("STREAM_D_KEY_SET") == 0
        assert await appl.redis.llen("STREAM_Q_KEY_VALUE_OP_QUEUE") == 0
    finally:
        assert daemon.stop() == 0


async def test_priorities_are_honoured_and_no_table_starves(
    clean_redis: EmbeddedRedis, appl: DBConnector, tmp_path: Path
) -> None:
    n = 2000
    for name in ("PRIO_HI", "PRIO_MID", "PRIO_LO"):
        producer = ProducerStateTable(appl, name, buffered=True)
        for i in range(n):
            await producer.set(f"k{i}", [("f", "v")])
        await producer.flush()
    records_path = tmp_path / "records.jsonl"
    tables = [
        {"db": "APPL_DB", "table": "PRIO_LO", "priority": 0, "pop_batch_size": 50},
        {"db": "APPL_DB", "table": "PRIO_HI", "priority": 10, "pop_batch_size": 50},
        {"db": "APPL_DB", "table": "PRIO_MID", "priority": 5, "pop_batch_size": 50},
    ]
    config = write_config(tmp_path, clean_redis, {"orchs": [recording(records_path, tables)]})
    daemon = DaemonProcess(config, tmp_path / "log")
    try:
        daemon.wait_ready()
        model = {(t, f"k{i}"): {"f": "v"} for t in ("PRIO_HI", "PRIO_MID", "PRIO_LO") for i in range(n)}
        records = await wait_for_model(records_path, model, daemon)
    finally:
        assert daemon.stop() == 0
    order = [r[0] for r in records]
    last = {t: max(i for i, name in enumerate(order) if name == t) for t in ("PRIO_HI", "PRIO_MID", "PRIO_LO")}
    assert last["PRIO_HI"] < last["PRIO_MID"] < last["PRIO_LO"], last
    lo_before_hi_done = order[: last["PRIO_HI"]].count("PRIO_LO")
    assert 0 < lo_before_hi_done < n // 2, lo_before_hi_done  # served, but far less than the high one


def daemon_client_ids(clients: str) -> tuple[list[str], list[str]]:
    """(pub/sub, command) connection ids of the daemon: the unix-socket clients."""
    pubsub, normal = [], []
    for line in clients.splitlines():
        fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        if "U" in fields.get("flags", ""):
            (pubsub if "P" in fields["flags"] else normal).append(fields["id"])
    return pubsub, normal


async def test_client_kill_of_the_daemons_connections_loses_nothing(
    clean_redis: EmbeddedRedis, appl: DBConnector, state_db: DBConnector, tmp_path: Path
) -> None:
    """Pub/sub kills lose nothing: the re-subscribe re-checks every table. A command connection
    killed between Redis running a pop and its reply arriving would take that batch with it (the
    C++ consumer's fate); the daemon's in-flight record has it, and it is read back. Every change
    is handled."""
    records_path = tmp_path / "records.jsonl"
    daemon = DaemonProcess(write_config(tmp_path, clean_redis, stream_config(records_path)), tmp_path / "log")
    keys = {"STREAM_A": 1500, "STREAM_B": 1000, "STREAM_C": 1000, "STREAM_D": 1000, "STREAM_Q": 500}
    stream = Stream(stream_tables(appl, state_db), keys)
    killed = {"pubsub": 0, "normal": 0}

    async def killer() -> None:
        for round_ in range(8):
            await asyncio.sleep(0.15)
            pubsub, normal = daemon_client_ids(await appl.redis.execute_command("CLIENT", "LIST"))
            for client_id in pubsub + (normal if round_ % 2 else []):
                if await appl.redis.execute_command("CLIENT", "KILL", "ID", client_id) == 1:
                    killed["pubsub" if client_id in pubsub else "normal"] += 1

    try:
        daemon.wait_ready()
        kill = asyncio.ensure_future(killer())
        await stream.fill()
        await stream.churn(3000, chunk=100, pause=0.01)
        await kill
        assert killed["pubsub"] >= 4 and killed["normal"] >= 2, killed
        await wait_for_model(records_path, stream.model, daemon)
        assert daemon.events("pubsub reconnected"), "the pub/sub connection was not re-established"
    finally:
        assert daemon.stop() == 0
    for db in (appl, state_db):
        for key in await db.redis.keys("_SWSSD_INFLIGHT:*"):
            assert await db.redis.hkeys(key) == ["seq"], f"{key}: batches left after a clean shutdown"


async def test_sigterm_mid_stream_exits_0_and_every_change_is_handled_or_still_in_redis(
    clean_redis: EmbeddedRedis, appl: DBConnector, tmp_path: Path
) -> None:
    records_path = tmp_path / "records.jsonl"
    tables = [{"db": "APPL_DB", "table": name, "pop_batch_size": 50} for name in ("TERM_A", "TERM_B")]
    config = {"daemon": {"pending_limit": 300, "shutdown_timeout": 20.0},
              "orchs": [recording(records_path, tables, delay=0.001)]}
    daemon = DaemonProcess(write_config(tmp_path, clean_redis, config), tmp_path / "log")
    stream = Stream({n: ProducerStateTable(appl, n, buffered=True) for n in ("TERM_A", "TERM_B")},
                    {"TERM_A": 2000, "TERM_B": 2000})
    try:
        daemon.wait_ready()
        await stream.fill()
        await stream.churn(2000)
        await asyncio.sleep(1.0)
        assert len(read_records(records_path)) > 0
        daemon.signal(signal.SIGTERM)
        assert daemon.wait(60) == 0
    finally:
        daemon.kill()
    records = read_records(records_path)
    check_values_advance(records)
    handled = fold(records)
    # What was not popped is still in Redis: apply it the way the next pop would.
    left = dict(handled)
    unpopped = 0
    for table in ("TERM_A", "TERM_B"):
        for key in await appl.redis.smembers(f"{table}_KEY_SET"):
            unpopped += 1
            if await appl.redis.sismember(f"{table}_DEL_SET", key):
                left.pop((table, key), None)
            fields = await appl.redis.hgetall(f"_{table}:{key}")
            if fields:
                left.setdefault((table, key), {}).update(fields)
    assert unpopped > 0, "the daemon finished everything before SIGTERM; the test proves nothing"
    assert left == stream.model
    assert daemon.events("stopped")


async def test_reconcile_rebuilds_state_after_a_restart(
    clean_redis: EmbeddedRedis, appl: DBConnector, tmp_path: Path
) -> None:
    tables = [{"db": "APPL_DB", "table": "RECON", "reconcile": True}]
    stream = Stream({"RECON": ProducerStateTable(appl, "RECON", buffered=True)}, {"RECON": 300})
    first = tmp_path / "first.jsonl"
    config = write_config(tmp_path, clean_redis, {"orchs": [recording(first, tables)]})
    daemon = DaemonProcess(config, tmp_path / "log1")
    try:
        daemon.wait_ready()
        await stream.fill()
        await wait_for_model(first, stream.model, daemon)
    finally:
        assert daemon.stop() == 0
    # While it is down: updates, deletes, new keys.
    stream.keys["RECON"] = 350
    await stream.churn(200)
    for i in range(300, 350):
        await stream._set("RECON", f"k{i}", stream._fvs(FIELDS[:2]))
    await stream.flush()

    second = tmp_path / "second.jsonl"
    daemon = DaemonProcess(write_config(tmp_path, clean_redis, {"orchs": [recording(second, tables)]}, "second.toml"),
                           tmp_path / "log2")
    try:
        daemon.wait_ready()
        assert daemon.wait_for_log("reconciled")[0]["entries"] >= 250  # reconcile runs beside start-up
        # A plugin starting from nothing rebuilds the whole table from what it is handed.
        await wait_for_model(second, stream.model, daemon)
    finally:
        assert daemon.stop() == 0


async def test_failing_handlers_are_retried_dead_lettered_and_timed_out(
    clean_redis: EmbeddedRedis, appl: DBConnector, state_db: DBConnector, tmp_path: Path
) -> None:
    records_path = tmp_path / "records.jsonl"
    capture_dir = tmp_path / "capture"
    config = {
        "capture": {"enabled": True, "directory": str(capture_dir)},
        "orchs": [
            {**recording(records_path, [{"db": "APPL_DB", "table": "TROUBLE"}], plugin="orch_plugins:TroubleOrch"),
             "retry": {"max_attempts": 3, "backoff_initial": 0.05, "backoff_max": 0.2,
                       "handler_timeout": 0.5, "retry_interval": 0.2}},
            recording(records_path, [{"db": "APPL_DB", "table": "CALM"}]),
        ],
    }
    daemon = DaemonProcess(write_config(tmp_path, clean_redis, config), tmp_path / "log")
    trouble = ProducerStateTable(appl, "TROUBLE")
    calm = ProducerStateTable(appl, "CALM")
    try:
        daemon.wait_ready()
        for key in ("hang1", "fail1", "flaky1", "wait1", "ok1"):
            await trouble.set(key, [("f", "v1")])
        await asyncio.sleep(0.3)  # hang1 is hanging now: the other table must still flow
        for i in range(50):
            await calm.set(f"c{i}", [("f", "v")])
        await asyncio.sleep(0.5)
        await state_db.redis.hset("GATE|wait1", "open", "1")

        dead = daemon.wait_for_log("task dead-lettered", timeout=30, count=2)
        by_key = {e["key"]: e for e in dead}
        assert by_key["fail1"]["attempts"] == 3 and "RuntimeError: boom fail1" in by_key["fail1"]["reason"]
        assert "Traceback" in by_key["fail1"]["exception"]
        assert by_key["hang1"]["reason"] == "handler timed out after 0.5s"
        failures = [e for e in daemon.events("handler failed; will retry") if e["key"] == "fail1"]
        assert [e["attempt"] for e in failures] == [1, 2] and all(e["table"] == "TROUBLE" for e in failures)
        assert "Traceback" in failures[0]["exception"]

        def handled() -> set[tuple[str, str]]:
            return {(r[0], r[1]) for r in read_records(records_path)}

        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        want = {("TROUBLE", "ok1"), ("TROUBLE", "flaky1"), ("TROUBLE", "wait1")}
        want |= {("CALM", f"c{i}") for i in range(50)}
        while not want <= handled() and loop.time() < deadline:
            await asyncio.sleep(0.1)
        assert want <= handled()
        assert ("TROUBLE", "fail1") not in handled() and ("TROUBLE", "hang1") not in handled()
        assert [e["key"] for e in daemon.events("task waits")] == ["wait1"]
    finally:
        assert daemon.stop() == 0
    entries = [json.loads(line) for line in (capture_dir / "swssd.capture.jsonl").read_text().splitlines()]
    assert {e["key"] for e in entries if e.get("dead_letter")} == {"fail1", "hang1"}
    assert {(e["table"], e["key"]) for e in entries if not e.get("dead_letter")} >= want


def run_cli(tmp_path: Path, config_text: str, timeout: float = 60.0) -> tuple[int, str]:
    import subprocess
    import sys

    from daemon_harness import TESTS_DIR

    path = tmp_path / "bad.toml"
    path.write_text(config_text)
    env = {"PYTHONPATH": str(TESTS_DIR), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-m", "swssd.cli", "run", "--config", str(path)],
        capture_output=True, text=True, timeout=timeout, env=env,
    )
    return proc.returncode, proc.stderr


def test_unknown_database_is_a_named_config_error(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    db_config = clean_redis.write_database_config(tmp_path / "database_config.json")
    code, err = run_cli(tmp_path, f"""
[redis]
database_config = "{db_config}"
[[orchs]]
plugin = "orch_plugins:RecordingOrch"
tables = [{{db = "APPL_DB", table = "A"}}, {{db = "NOPE_DB", table = "B"}}]
""")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(tmp_path / "bad.toml") in lines[0] and "orchs.0.tables.1.db" in lines[0] and "NOPE_DB" in lines[0]


def test_plugin_that_fails_to_import_stops_the_start(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    db_config = clean_redis.write_database_config(tmp_path / "database_config.json")
    code, err = run_cli(tmp_path, f"""
[redis]
database_config = "{db_config}"
[[orchs]]
plugin = "no_such_module:Orch"
tables = [{{table = "A"}}]
""")
    assert code == 3
    assert err.strip().splitlines()[-1].startswith("swssd: error: plugin 'no_such_module:Orch': cannot import")


def test_plugin_that_fails_to_start_stops_the_daemon(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    db_config = clean_redis.write_database_config(tmp_path / "database_config.json")
    code, err = run_cli(tmp_path, f"""
[redis]
database_config = "{db_config}"
[logging]
format = "json"
[[orchs]]
plugin = "orch_plugins:RecordingOrch"
options = {{record = "{tmp_path / 'r.jsonl'}"}}
tables = [{{table = "A"}}]
[[orchs]]
plugin = "orch_plugins:FailingStartOrch"
name = "asic"
tables = [{{table = "B"}}]
""")
    assert code == 3
    assert "swssd: error: plugin 'asic': start() failed: RuntimeError: cannot reach the ASIC" in err
    assert "orch_plugins.py, line " in err.strip().splitlines()[-1]  # where the plugin raised it
    assert '"event": "ready"' not in err


def test_sigterm_while_a_plugin_start_swallows_the_cancellation(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    """A cancellation lost during start-up (a plugin catching it, or Python 3.11's wait_for) must
    not leave SIGTERM unanswered: the daemon asks again and exits 0, never READY."""
    record = tmp_path / "r.jsonl"
    config = write_config(tmp_path, clean_redis, {"orchs": [{
        "plugin": "orch_plugins:StubbornStartOrch", "tables": [{"table": "A"}], "options": {"record": str(record)},
    }]})
    daemon = DaemonProcess(config, tmp_path / "log")
    try:
        assert wait_until(lambda: record.exists() and "starting" in record.read_text(), 30)
        daemon.signal(signal.SIGTERM)
        assert daemon.wait(timeout=15) == 0, daemon.log_path.read_text()[-2000:]
        assert not daemon.events("ready")
    finally:
        daemon.kill()


async def test_sighup_reopens_the_log_and_a_second_sigterm_forces_exit(
    clean_redis: EmbeddedRedis, appl: DBConnector, tmp_path: Path
) -> None:
    log_file = tmp_path / "swssd.log"
    config = {
        "logging": {"format": "json", "level": "info", "file": str(log_file)},
        "daemon": {"shutdown_timeout": 60.0},
        "orchs": [{**recording(tmp_path / "r.jsonl", [{"db": "APPL_DB", "table": "HUP"}],
                               plugin="orch_plugins:TroubleOrch"),
                   "retry": {"handler_timeout": 120.0}}],
    }
    daemon = DaemonProcess(write_config(tmp_path, clean_redis, config), tmp_path / "stderr")
    daemon.log_path = log_file
    try:
        daemon.wait_ready()
        log_file.rename(tmp_path / "swssd.log.1")  # what logrotate does
        daemon.signal(signal.SIGHUP)
        assert wait_until(lambda: log_file.exists() and "reopened log and capture files" in log_file.read_text(), 20)
        await ProducerStateTable(appl, "HUP").set("hang1", [("f", "v")])  # a handler that never returns
        await asyncio.sleep(0.5)
        daemon.signal(signal.SIGTERM)
        daemon.wait_for_log("stopping")
        assert daemon.proc.poll() is None  # waiting for the hanging handler (shutdown_timeout 60 s)
        daemon.signal(signal.SIGTERM)
        assert daemon.wait(20) == 1
        assert daemon.events("forced exit")
    finally:
        daemon.kill()


def test_unreachable_redis_names_the_file_it_came_from_and_what_to_do(tmp_path: Path) -> None:
    """config/swssd.toml run on a machine without that Redis: the first waiting line says which
    database_config.json named the address and how to run without one (a private redis-server)."""
    import shutil
    import signal
    import subprocess
    import sys

    repo_config = Path(__file__).resolve().parent.parent / "config"
    shutil.copy(repo_config / "swssd.toml", tmp_path / "swssd.toml")
    db_config = json.loads((repo_config / "database_config.json").read_text())
    db_config["INSTANCES"]["redis"]["unix_socket_path"] = str(tmp_path / "no-redis.sock")
    (tmp_path / "database_config.json").write_text(json.dumps(db_config))
    proc = subprocess.Popen(
        [sys.executable, "-m", "swssd.cli", "run", "--config", str(tmp_path / "swssd.toml")],
        stderr=subprocess.PIPE, text=True, env={"PATH": "/usr/bin:/bin"},
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert "waiting for Redis" in first, first
    assert f"address_from={tmp_path / 'database_config.json'}" in first, first
    assert "`swssd run` without --config" in first, first


def test_a_crash_exits_non_zero_on_every_start(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    """A task that kills its worker: the first start exits 1; the next takes it over from the
    in-flight record and crashes again during start-up, which must exit non-zero too (an exit 0
    would leave a Restart=on-failure unit down, as if it had stopped cleanly)."""
    import asyncio

    from daemon_harness import DaemonProcess, write_config
    from swssd import DBConnector, ProducerStateTable

    config = write_config(tmp_path, clean_redis, {"orchs": [{
        "plugin": "orch_plugins:PoisonOrch", "options": {"record": str(tmp_path / "r.jsonl")},
        "tables": [{"db": "APPL_DB", "table": "POISONED"}],
    }]})
    first = DaemonProcess(config, tmp_path / "log1")
    first.wait_ready()

    async def produce() -> None:
        db = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
        await ProducerStateTable(db, "POISONED").set("poison1", [("f", "v")])
        await db.close()

    asyncio.run(produce())
    assert first.wait(30) == 1
    for start in (2, 3):  # taken over from the in-flight record, and crashing again
        again = DaemonProcess(config, tmp_path / f"log{start}")
        assert again.wait(30) != 0, (tmp_path / f"log{start}").read_text()[-2000:]
    # The next start sets it aside instead of a crash loop: dead-lettered with the reason, and serving.
    fourth = DaemonProcess(config, tmp_path / "log4")
    try:
        fourth.wait_ready()
        (aside,) = fourth.events("in-flight tasks set aside: in a handler when each of the last 3 runs ended "
                                 "abnormally (crashed, killed or stalled): it may be what ends the daemon")
        assert aside["keys"] == ["poison1"] and aside["tasks"] == 1
        assert fourth.proc.poll() is None
    finally:
        assert fourth.stop() == 0
