"""One campaign run: a private redis-server (AOF, fsync always), the fault proxy, `swssd run` with
the mirror plugin on a table of every kind, the producers and the blocking clients, the
schedule's faults, then a quiet phase and the checker.

The daemon reaches Redis through the proxy (TCP, no unix socket); producers, the blocking
clients and the campaign's own admin connection go to Redis directly and are named
`campaign-*` so that CLIENT KILL of "normal" connections spares them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from daemon_harness import TESTS_DIR, DaemonProcess, read_records, to_toml
from swssd import DBConnector, ProducerStateTable, ProducerTable, ZmqClient, ZmqProducerStateTable
from swssd.channels.notification_producer import NotificationProducer
from swssd.redis.embedded_redis import EmbeddedRedis, free_port
from swssd.schema import DATABASES

from .checker import Model, check_values, compare, fold
from .proxy import FaultProxy
from .schedule import FAULT_KINDS, Schedule

STATE, QUEUE, CFG, NTF, ZMQ = "CAMP_STATE", "CAMP_QUEUE", "CAMP_CFG", "CAMP_NTF", "CAMP_ZMQ"
KINDS = {STATE: "state", QUEUE: "queue", CFG: "subscriber", NTF: "notification", ZMQ: "zmq"}
KEYS = {STATE: 300, QUEUE: 100, CFG: 60, ZMQ: 100}
FIELDS = ("f0", "f1", "f2", "f3")
#: changes a second the producers write while the faults run
RATE = 700


@dataclass
class Result:
    schedule: Schedule
    anomalies: list[str] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)
    changes_written: int = 0
    changes_checked: int = 0
    blocking: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def replay_command(self) -> str:
        s = self.schedule
        left_out = [k for k in FAULT_KINDS if k not in s.kinds]
        extra = "" if not left_out else f" --kinds={','.join('-' + k for k in left_out)}"
        extra += "" if s.blocking else " --no-blocking"
        return f"PYTHONPATH=tests python -m campaign --seed {s.seed} --seconds {s.seconds:g}{extra}"


class Run:
    def __init__(self, schedule: Schedule, tmp: Path) -> None:
        self.schedule = schedule
        self.tmp = tmp
        self.rng = random.Random(schedule.seed ^ 0x5EED)
        self.model = Model()
        self.result = Result(schedule)
        self.daemons: list[DaemonProcess] = []
        self.exits: list[tuple[str, int]] = []
        #: held by a producer's chunk, and by the faults its writes must not straddle
        self.lock = asyncio.Lock()
        self.seq = 0
        self.sent_ntf: set[str] = set()
        self.zmq_endpoint = f"tcp://127.0.0.1:{free_port()}"
        self.touched: dict[str, set[str]] = {t: set() for t in (STATE, QUEUE, CFG)}

    # -- set-up ------------------------------------------------------------------------------

    def _db_config(self) -> Path:
        doc = {
            "INSTANCES": {"redis": {"hostname": "127.0.0.1", "port": self.proxy.port}},
            "DATABASES": {n: {"id": i, "separator": s, "instance": "redis"} for n, (i, s) in DATABASES.items()},
            "VERSION": "1.0",
        }
        path = self.tmp / "database_config.json"
        path.write_text(json.dumps(doc))
        return path

    def _config(self, n: int) -> Path:
        h = self.schedule.handler
        options = {"record": str(self.tmp / f"rec{n}.jsonl"), "seed": self.schedule.seed,
                   "slow_rate": h.slow_rate, "slow_seconds": h.slow_seconds,
                   "retry_rate": h.retry_rate, "fail_rate": h.fail_rate}
        doc = {
            "logging": {"format": "json", "level": "info"},
            "daemon": {"shutdown_timeout": 5.0, "health_interval": 1.0, "enable_keyspace_events": True},
            "retry": {"max_attempts": 1000, "backoff_initial": 0.02, "backoff_max": 0.3, "handler_timeout": 5.0,
                      "retry_interval": 0.2},
            "redis": {"database_config": str(self.db_config)},
            "orchs": [{
                "plugin": "campaign.plugin:CampaignOrch", "options": options,
                "tables": [
                    {"db": "APPL_DB", "table": STATE, "kind": "state", "reconcile": True, "pop_batch_size": 64},
                    {"db": "APPL_DB", "table": QUEUE, "kind": "queue", "pop_batch_size": 64},
                    {"db": "CONFIG_DB", "table": CFG, "kind": "subscriber"},
                    {"db": "APPL_DB", "table": NTF, "kind": "notification"},
                    {"db": "APPL_DB", "table": ZMQ, "kind": "zmq", "endpoint": self.zmq_endpoint},
                ],
            }],
        }
        path = self.tmp / f"swssd{n}.toml"
        path.write_text(to_toml(doc))
        return path

    @property
    def daemon(self) -> DaemonProcess:
        return self.daemons[-1]

    def start_daemon(self, wait: bool = True) -> DaemonProcess:
        n = len(self.daemons)
        daemon = DaemonProcess(self._config(n), self.tmp / f"log{n}")
        self.daemons.append(daemon)
        if wait:
            daemon.wait_ready(40)
        return daemon

    async def connect(self, db_id: int, name: str, separator: str = ":") -> DBConnector:
        return await DBConnector.from_url(self.redis.url, db_id=db_id, separator=separator, name=name,
                                          client_name=f"campaign-{name}")

    # -- the producers -----------------------------------------------------------------------

    def _value(self) -> str:
        self.seq += 1
        return f"v{self.seq}"

    def _fvs(self) -> list[tuple[str, str]]:
        return [(f, self._value()) for f in self.rng.sample(FIELDS, self.rng.randint(1, 3))]

    async def _one_change(self) -> None:
        rng, m = self.rng, self.model
        table = rng.choices((STATE, QUEUE, CFG, NTF, ZMQ), (35, 20, 20, 10, 15))[0]
        if table == NTF:
            data = f"n{self.seq}"
            value = self._value()
            self.sent_ntf.add(data)
            m.write(NTF, data, [("v", value)])
            await self.ntf.send("ev", data, [("v", value)])
            return
        key = f"{table[5].lower()}{rng.randrange(KEYS[table])}"
        if table in self.touched:
            self.touched[table].add(key)
        if rng.random() < 0.15:
            m.delete(table, key)
            if table == CFG:
                await self.cfg.redis.delete(f"{CFG}|{key}")
            else:
                await self.producers[table].delete(key)
            if rng.random() < 0.5:
                return
        fvs = self._fvs()
        if table == CFG:
            m.write(CFG, key, fvs)
            await self.cfg.redis.hset(f"{CFG}|{key}", mapping=dict(fvs))
        else:
            m.write(table, key, fvs)
            await self.producers[table].set(key, fvs)

    async def produce(self) -> None:
        loop = asyncio.get_running_loop()
        start, chunk = loop.time(), 25
        total = int(RATE * self.schedule.seconds)
        done = 0
        while done < total:
            async with self.lock:
                for _ in range(chunk):
                    await self._one_change()
                for p in (self.producers[STATE], self.producers[QUEUE]):
                    await p.flush()
            done += chunk
            await asyncio.sleep(max(0.0, start + done / RATE - loop.time()))

    async def rewrite_truth(self) -> None:
        """After Redis lost everything: DEL every key ever written, SET the live ones again, as a
        producer that starts over does (the subscriber table: the live entries)."""
        for table in (STATE, QUEUE):
            producer = self.producers[table]
            for key in sorted(self.touched[table]):
                await producer.delete(key)
                if key in self.model.truth.get(table, {}):
                    await producer.set(key, sorted(self.model.truth[table][key].items()))
            await producer.flush()
        for key, entry in self.model.truth.get(CFG, {}).items():
            if entry:
                await self.cfg.redis.hset(f"{CFG}|{key}", mapping=entry)

    # -- the faults ---------------------------------------------------------------------------

    async def _restart_daemon(self, sig: int) -> None:
        daemon = self.daemon
        daemon.signal(sig)
        code = await asyncio.to_thread(daemon.wait, 40)
        self.exits.append((signal.Signals(sig).name, code))
        await asyncio.to_thread(self.start_daemon)

    async def _kill_burst(self) -> None:
        """3-4 SIGKILLs in a row, each soon after the start before it was ready (a restart loop:
        systemd's, or the OOM killer's), each followed at once by a start."""
        for _ in range(self.rng.randint(3, 4)):
            await asyncio.sleep(self.rng.uniform(0.05, 0.6))
            self.daemon.kill()
            self.exits.append(("SIGKILL", -9))
            await asyncio.to_thread(self.start_daemon)

    def _stop_redis(self, sig: int) -> None:
        proc = self.redis.process
        assert proc is not None
        proc.send_signal(sig)
        proc.wait(15)
        if proc.stderr:
            proc.stderr.close()

    async def _clients(self, pubsub: bool) -> list[str]:
        out = []
        for line in (await self.admin.redis.execute_command("CLIENT", "LIST")).splitlines():
            info = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            if info.get("name", "").startswith("campaign"):
                continue
            subscribed = int(info.get("sub", 0)) + int(info.get("psub", 0)) > 0 or "P" in info.get("flags", "")
            if subscribed == pubsub:
                out.append(info["id"])
        return out

    async def inject(self, kind: str, length: float) -> None:
        admin = self.admin.redis
        if kind == "daemon_sigkill":
            await self._restart_daemon(signal.SIGKILL)
        elif kind == "daemon_sigkill_burst":
            await self._kill_burst()
        elif kind == "daemon_sigterm":
            await self._restart_daemon(signal.SIGTERM)
        elif kind == "daemon_stop_cont":
            self.daemon.signal(signal.SIGSTOP)
            await asyncio.sleep(length)
            self.daemon.signal(signal.SIGCONT)
        elif kind in ("redis_restart", "redis_kill", "redis_wipe"):
            async with self.lock:
                self._stop_redis(signal.SIGKILL if kind == "redis_kill" else signal.SIGTERM)
                if kind == "redis_wipe":
                    for name in os.listdir(self.redis.dir):
                        if name.startswith(("appendonly", "dump")):
                            path = Path(self.redis.dir) / name
                            shutil.rmtree(path) if path.is_dir() else path.unlink()
                await asyncio.sleep(self.rng.uniform(0.1, 1.0))
                self.redis.start()
                if kind == "redis_wipe":
                    await self.rewrite_truth()
        elif kind in ("client_kill_pubsub", "client_kill_normal"):
            for client in await self._clients(kind == "client_kill_pubsub"):
                with contextlib.suppress(Exception):
                    await admin.execute_command("CLIENT", "KILL", "ID", client)
        elif kind == "client_pause":
            await admin.execute_command("CLIENT", "PAUSE", int(length * 1000), "ALL")
            await asyncio.sleep(length)
        elif kind == "notify_off":
            await admin.config_set("notify-keyspace-events", "")
        elif kind == "script_flush":
            await admin.execute_command("SCRIPT", "FLUSH")
        elif kind == "proxy_delay":
            self.proxy.delay = self.rng.uniform(0.005, 0.05)
            await asyncio.sleep(length)
            self.proxy.flow()
        elif kind == "proxy_stall":
            self.proxy.stall()
            await asyncio.sleep(length)
            self.proxy.flow()
        elif kind == "proxy_cut":
            self.proxy.cut()
        else:
            raise ValueError(f"unknown fault {kind!r}")
        self.result.faults[kind] += 1

    async def faults(self) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        for fault in self.schedule.faults:
            await asyncio.sleep(max(0.0, start + fault.at - loop.time()))
            await self.inject(fault.kind, fault.length)

    # -- the quiet phase and the checks -------------------------------------------------------

    def records(self) -> list[list[Any]]:
        return [read_records(self.tmp / f"rec{n}.jsonl") for n in range(len(self.daemons))]

    def _of(self, table: str, processes: list[list[Any]]) -> list[list[Any]]:
        return [[r for r in records if r[0] == table] for records in processes]

    async def _redis_table(self, table: str, db: DBConnector, sep: str) -> dict[str, dict[str, str]]:
        out = {}
        async for name in db.redis.scan_iter(match=f"{table}{sep}*", count=1000):
            out[name[len(table) + 1:]] = await db.redis.hgetall(name)
        return out

    async def settle(self, timeout: float) -> None:
        """Send probes on the at-most-once channels until one of each is handled, and wait for the
        state, queue and subscriber views to equal the truth."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        probe_cfg = self._value()
        await self.cfg.redis.hset(f"{CFG}|probe", "f0", probe_cfg)
        self.model.write(CFG, "probe", [("f0", probe_cfg)])
        got_ntf = got_zmq = False
        while loop.time() < deadline:
            processes = self.records()
            flat = [r for p in processes for r in p]
            got_ntf = got_ntf or any(r[0] == NTF and r[1].startswith("probe") for r in flat)
            got_zmq = got_zmq or any(r[0] == ZMQ and r[1] == "probe" for r in flat)
            if not got_ntf:
                value = self._value()
                data = f"probe{self.seq}"
                self.model.write(NTF, data, [("v", value)])
                await self.ntf.send("ev", data, [("v", value)])
            if not got_zmq:
                fvs = [("f0", self._value())]
                self.model.write(ZMQ, "probe", fvs)
                await self.zmq.set("probe", fvs)
            if got_ntf and got_zmq and all(
                fold([r for r in flat if r[0] == t], False) == self.model.truth.get(t, {}) for t in (STATE, QUEUE)
            ) and fold([r for r in processes[-1] if r[0] == CFG], True) == self.model.truth.get(CFG, {}):
                return
            await asyncio.sleep(0.5)
        if not got_ntf:
            self.result.anomalies.append(f"notification {NTF}: deaf, no probe handled within {timeout:g} s")
        if not got_zmq:
            self.result.anomalies.append(f"zmq {ZMQ}: deaf, no probe handled within {timeout:g} s")

    async def check(self) -> None:
        out = self.result.anomalies
        processes = self.records()
        for table, kind in KINDS.items():
            mine = self._of(table, processes)
            self.result.changes_checked += sum(len(p) for p in mine)
            out += check_values(kind, table, mine, self.model, at_most_once=kind in ("notification", "zmq"))
            flat = [r for p in mine for r in p]
            if kind in ("state", "queue"):
                out += compare(kind, table, fold(flat, False), self.model.truth.get(table, {}))
            elif kind == "subscriber":
                # a start delivers every existing entry as a SET and no DEL for a key deleted while
                # no daemon ran (the C++ table's contract): the last process's view is the one to check
                out += compare(kind, table, fold(mine[-1], True), self.model.truth.get(table, {}))
        cfg_in_redis = await self._redis_table(CFG, self.cfg, "|")
        out += compare("redis", CFG, cfg_in_redis, self.model.truth.get(CFG, {}))
        state_in_redis = await self._redis_table(STATE, self.appl, ":")
        out += compare("redis", STATE, state_in_redis, self.model.truth.get(STATE, {}))
        for name in await self.appl.redis.keys("_SWSSD_DEAD:*"):
            out.append(f"set aside: {await self.appl.redis.llen(name)} entries on {name}")
        for n, daemon in enumerate(self.daemons):
            aside: Counter[tuple[str, str]] = Counter()
            for e in daemon.logs():
                if "set aside" in str(e.get("event", "")):
                    aside[(str(e.get("event"))[:160], str(e.get("table")))] += int(e.get("tasks") or 1)
            out += [f"daemon {n}: {event} ({table}, {tasks} tasks)" for (event, table), tasks in aside.items()]
            # a zmq change for a table this daemon consumes is never "for a table without consumer"
            unrouted = [e for e in daemon.events("zmq message for a table without consumer dropped")
                        if e.get("table") == ZMQ]
            if unrouted:
                out.append(f"daemon {n}: zmq changes for its own table {ZMQ} dropped as unrouted at start")
        crashes = [(how, code) for how, code in self.exits if how != "SIGKILL" and code != 0]
        if crashes:
            out.append(f"daemon exits not 0 after SIGTERM: {crashes}")
        if self.result.blocking.get("wrong"):
            b = self.result.blocking
            out.append(f"blocking layer: {b['wrong']} of {b['calls']} calls got another call's reply, "
                       f"e.g. {b['examples'][:3]}")

    # -- the whole run ----------------------------------------------------------------------

    async def run(self, settle_timeout: float) -> Result:
        began = time.monotonic()
        self.redis = EmbeddedRedis(extra_args=["--appendonly", "yes", "--appendfsync", "always"]).start()
        self.proxy = FaultProxy(self.redis.port).start()
        self.db_config = self._db_config()
        blocking = None
        try:
            self.admin = await self.connect(0, "admin")
            await self.admin.redis.config_set("notify-keyspace-events", "")  # the daemon must turn them on
            self.appl = await self.connect(0, "APPL_DB")
            self.cfg = await self.connect(4, "CONFIG_DB", "|")
            self.producers: dict[str, Any] = {STATE: ProducerStateTable(self.appl, STATE, buffered=True),
                                              QUEUE: ProducerTable(self.appl, QUEUE, buffered=True)}
            self.ntf = NotificationProducer(self.appl, NTF)
            self.zmq_client = ZmqClient(self.zmq_endpoint)
            self.zmq = ZmqProducerStateTable(self.appl, ZMQ, self.zmq_client, db_persistence=False)
            self.producers[ZMQ] = self.zmq
            await asyncio.to_thread(self.start_daemon)
            path = os.pathsep.join(filter(None, [str(TESTS_DIR), os.environ.get("PYTHONPATH")]))
            env = dict(os.environ, PYTHONPATH=path)
            if self.schedule.blocking:
                blocking = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "campaign.blocking_client", "--port", str(self.redis.port),
                    "--seed", str(self.schedule.seed), "--seconds", str(self.schedule.seconds + 1),
                    "--db-config", str(self.redis.write_database_config(self.tmp / "blocking_db_config.json")),
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
                )
            await asyncio.gather(self.produce(), self.faults())
            if blocking is not None:
                out, err = await asyncio.wait_for(blocking.communicate(), 60)
                if blocking.returncode == 0:
                    self.result.blocking = json.loads(out.decode().strip().splitlines()[-1])
                else:
                    how = (f"signal {signal.Signals(-blocking.returncode).name}" if blocking.returncode < 0
                           else f"exit {blocking.returncode}")
                    self.result.anomalies.append(
                        f"blocking layer: the client process died ({how}): {err.decode(errors='replace')[-600:]}")
            await self.settle(settle_timeout)
            daemon = self.daemon
            daemon.signal(signal.SIGTERM)
            self.exits.append(("SIGTERM", await asyncio.to_thread(daemon.wait, 40)))
            await self.check()
        except Exception as exc:
            # a daemon that never got ready, a Redis that would not start: the run's own finding,
            # reported with its seed like any other, the daemon's last log lines with it
            tail = self.daemon.log_path.read_text(errors="replace")[-800:] if self.daemons else ""
            self.result.anomalies.append(f"run aborted: {exc!r:.600}\n{tail}")
        finally:
            self.result.changes_written = self.model.changes
            if blocking is not None and blocking.returncode is None:
                blocking.kill()
                await blocking.wait()
            for d in self.daemons:
                d.kill()
            for name in ("zmq", "admin", "appl", "cfg"):
                conn = getattr(self, name, None)
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await conn.close()
            if getattr(self, "zmq_client", None) is not None:
                self.zmq_client.close()
            self.proxy.close()
            self.redis.stop()
        self.result.seconds = time.monotonic() - began
        return self.result


def run_schedule(schedule: Schedule, tmp: Path, settle_timeout: float = 30.0) -> Result:
    """Run one schedule in its own event loop; tmp holds its configs, logs and records."""
    tmp.mkdir(parents=True, exist_ok=True)
    return asyncio.run(Run(schedule, tmp).run(settle_timeout))
