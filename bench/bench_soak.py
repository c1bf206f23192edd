"""Soak (issue 25): `swssd run` under a mixed stream with periodic faults, for --minutes (default 30).

    .venv/bin/python bench/bench_soak.py [--minutes 30] [--fault-interval 60] [--rate 300] [--workdir DIR]

The daemon runs as a subprocess (tests/daemon_harness.DaemonProcess: this file adds tests/ to
sys.path to reuse it and write_config) against a private redis-server with AOF and
`notify-keyspace-events AKE`, with capture on and one plugin, written by this file beside the config,
that appends every task it gets as a JSON line [pid, table, key, op, fvs]. It consumes:

    SOAK_STATE   APPL_DB state table (reconcile on)   ProducerStateTable, random keys of a pool, merged SETs, DELs
    SOAK_QUEUE   APPL_DB queue table                  ProducerTable, one key per op (SETs, some DELs)
    SOAK_PORT    CONFIG_DB subscriber table           HSET/HDEL/DEL on random keys of a pool
    SOAK_EVENTS  notification channel                 NotificationProducer, one data string per message
    SOAK_ZMQ     zmq table, tcp://127.0.0.1:<free>    ZmqProducerStateTable, one key per change (SETs, DELs)

The producers run here (swssd's library), --rate changes a second in all (default 300), keeping the
truth. Every --fault-interval seconds one fault, rotating: CLIENT KILL of every other Redis client
(the daemon's and the producers', which reconnect), SIGTERM + restart of the daemon (exit 0
required), SIGKILL + restart, Redis restart (SIGTERM, AOF, same port and socket), Redis frozen by
SIGSTOP for --freeze seconds then SIGCONT (--faults picks and orders them: with only the Redis
faults the daemon keeps one pid for the whole run, the longest like-with-like RSS comparison).
Producers pause while Redis restarts or clients are killed (a write is never cut in the middle, so
the truth is exact); a frozen Redis just stalls them.

Every --sample-interval seconds (10) the daemon's RSS (VmRSS) and open descriptors (/proc/PID/fd)
are sampled. The daemon's pid changes at every restart, so samples are kept per lifetime. Flat means:
within each lifetime, the last sample minus the first one after --warmup seconds (30) is at most
10 MB and 10 descriptors (lifetimes with fewer than two samples after warm-up are listed, not
judged); across lifetimes, the first sample after warm-up of the last lifetime minus that of the
first is within the same bounds (like with like: the same point after a start).

At the end the producers stop, the daemon drains (until everything arrived or --drain seconds), is
stopped with SIGTERM (exit 0), and:
- state table: the records of all lifetimes folded (SETs merge, DEL removes) equal the producers'
  fold: 0 lost, 0 stale, 0 extra;
- subscriber table: the records of the last lifetime folded (a SET replaces the entry) equal
  CONFIG_DB, which must equal the producers' fold. Only the last lifetime: a start reads the entries
  that exist (as the C++ SubscriberStateTable), so an entry deleted while no daemon ran gets no DEL;
  how many did, over all lifetimes, is printed;
- queue: every op delivered with its fields (at least once; a duplicate is allowed only when the
  lifetime that first handled it ended by SIGKILL or a crash; others are failures; both reported);
- notifications and zmq are at most once by design (as in C++): sent/received are reported, and
  0 lost is required only for messages sent outside a fault window, [fault start - 1 s, end of the
  fault's recovery + --grace s (default 5)]. Every fault touches notifications (pub/sub); only the
  daemon restarts touch zmq (its channel does not go through Redis). Duplicates are failures.
Exit status 0 when all of this holds and every exit status was as expected, else 1 with the reasons.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from daemon_harness import DaemonProcess, write_config
from swssd import DBConnector, ProducerStateTable, ProducerTable
from swssd.channels.notification_producer import NotificationProducer
from swssd.channels.zmq import ZmqClient, ZmqProducerStateTable
from swssd.redis.embedded_redis import EmbeddedRedis, free_port

STATE, QUEUE, SUB, NTF, ZMQ = "SOAK_STATE", "SOAK_QUEUE", "SOAK_PORT", "SOAK_EVENTS", "SOAK_ZMQ"
#: share of the stream per kind
WEIGHTS = {STATE: 0.35, QUEUE: 0.2, SUB: 0.2, NTF: 0.12, ZMQ: 0.13}
POOL = {STATE: 2000, SUB: 500}
FIELDS = [f"f{i}" for i in range(5)]
FAULTS = ("client-kill", "sigterm", "sigkill", "redis-restart", "redis-freeze")
#: which at-most-once kinds a fault may cost messages
TOUCHES = {NTF: set(FAULTS), ZMQ: {"sigterm", "sigkill"}}
MB = 1024
FLAT_KB, FLAT_FDS = 10 * MB, 10

PLUGIN = '''"""Written by bench/bench_soak.py: every task as one JSON line [pid, table, key, op, fvs]."""
import json
import os

from swssd import KeyOpFieldsValues, Orch


class SoakOrch(Orch):
    async def start(self) -> None:
        self._out = open(self.options["record"], "a", encoding="utf-8", buffering=1)
        self._pid = os.getpid()

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        self._out.write(json.dumps([self._pid, table, task.key, task.op, task.fvs]) + "\\n")

    async def stop(self) -> None:
        self._out.close()
'''


@dataclass
class Lifetime:
    """One daemon process: how it ended and its (age s, RSS kB, fds) samples."""

    daemon: DaemonProcess
    started: float
    ready: float = 0.0
    ended_by: str = ""
    exit: int | None = None
    samples: list[tuple[float, int, int]] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.daemon.proc.pid


@dataclass
class Fault:
    name: str
    start: float
    end: float = 0.0


@dataclass
class Records:
    """What the plugin recorded, read incrementally."""

    path: Path
    offset: int = 0
    state: dict[str, dict[str, str]] = field(default_factory=dict)
    sub: dict[str, dict[str, str]] = field(default_factory=dict)
    #: the subscriber table as each lifetime (pid) saw it: a start reads the whole table again
    sub_by_pid: dict[int, dict[str, dict[str, str]]] = field(default_factory=dict)
    queue: dict[str, list[tuple[int, str, list[list[str]]]]] = field(default_factory=dict)
    ntf: Counter[str] = field(default_factory=Counter)
    zmq: Counter[str] = field(default_factory=Counter)
    zmq_fvs: dict[str, list[list[str]]] = field(default_factory=dict)
    lines: int = 0

    def read(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next read
        self.offset += end
        for line in data[:end].splitlines():
            if not line.endswith(b"]"):
                continue  # a line cut by SIGKILL
            pid, table, key, op, fvs = json.loads(line)
            self.lines += 1
            if table == STATE:
                if op == "DEL":
                    self.state.pop(key, None)
                else:
                    self.state.setdefault(key, {}).update(fvs)
            elif table == SUB:
                for sub in (self.sub, self.sub_by_pid.setdefault(pid, {})):
                    if op == "DEL":
                        sub.pop(key, None)
                    else:
                        sub[key] = dict(fvs)
            elif table == QUEUE:
                self.queue.setdefault(key, []).append((pid, op, fvs))
            elif table == NTF:
                self.ntf[key] += 1
            elif table == ZMQ:
                self.zmq[key] += 1
                self.zmq_fvs[key] = fvs


@dataclass
class Soak:
    args: argparse.Namespace
    tmp: Path
    server: EmbeddedRedis
    endpoint: str
    rng: random.Random = field(default_factory=lambda: random.Random(25))
    lifetimes: list[Lifetime] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: held by the producers while they write, and by faults that must not cut a write
    writing: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: held while the daemon is replaced (a fault, or a crash found by the sampler)
    replacing: asyncio.Lock = field(default_factory=asyncio.Lock)
    seq: int = 0
    sent: Counter[str] = field(default_factory=Counter)
    state_truth: dict[str, dict[str, str]] = field(default_factory=dict)
    sub_truth: dict[str, dict[str, str]] = field(default_factory=dict)
    queue_truth: dict[str, tuple[str, list[list[str]]]] = field(default_factory=dict)
    #: at-most-once kinds: key -> send time (monotonic)
    ntf_sent: dict[str, float] = field(default_factory=dict)
    ntf_no_subscriber: int = 0
    zmq_sent: dict[str, tuple[float, list[list[str]]]] = field(default_factory=dict)
    stop_producing: asyncio.Event = field(default_factory=asyncio.Event)
    sub_redis: dict[str, dict[str, str]] = field(default_factory=dict)
    t0: float = 0.0

    # -- the daemon ---------------------------------------------------------------------------

    def config(self) -> Path:
        (self.tmp / "soak_orch.py").write_text(PLUGIN)
        for old in [self.tmp / "records.jsonl", *self.tmp.glob("daemon*.log")]:  # a reused --workdir
            old.unlink(missing_ok=True)
        doc = {
            "daemon": {"shutdown_timeout": 10.0, "health_interval": 1.0},
            "capture": {"enabled": True, "directory": str(self.tmp / "capture")},
            "orchs": [{
                "plugin": "soak_orch:SoakOrch", "options": {"record": str(self.tmp / "records.jsonl")},
                "tables": [
                    {"db": "APPL_DB", "table": STATE, "kind": "state", "reconcile": True},
                    {"db": "APPL_DB", "table": QUEUE, "kind": "queue"},
                    {"db": "CONFIG_DB", "table": SUB, "kind": "subscriber"},
                    {"db": "APPL_DB", "table": NTF, "kind": "notification"},
                    {"db": "APPL_DB", "table": ZMQ, "kind": "zmq", "endpoint": self.endpoint},
                ],
            }],
        }
        return write_config(self.tmp, self.server, doc)

    async def start_daemon(self) -> Lifetime:
        n = len(self.lifetimes)
        life = Lifetime(DaemonProcess(self.tmp / "swssd.toml", self.tmp / f"daemon{n}.log"), time.monotonic())
        self.lifetimes.append(life)
        await asyncio.to_thread(life.daemon.wait_ready, 60)
        life.ready = time.monotonic()
        return life

    async def stop_daemon(self, sig: int, how: str) -> None:
        life = self.lifetimes[-1]
        life.daemon.signal(sig)
        life.exit = await asyncio.to_thread(life.daemon.wait, 60)
        life.ended_by = how
        expected = 0 if sig == signal.SIGTERM else -sig
        if life.exit != expected:
            self.problems.append(f"daemon {life.pid} exited {life.exit} after {how} (expected {expected})")

    # -- producers ----------------------------------------------------------------------------

    def _next(self) -> int:
        self.seq += 1
        return self.seq

    def _fvs(self) -> list[list[str]]:
        return [[f, f"v{self._next()}"] for f in sorted(self.rng.sample(FIELDS, self.rng.randint(1, 3)))]

    async def produce(self) -> None:
        url = self.server.url
        appl = await DBConnector.from_url(url, db_id=0, name="APPL_DB")
        cfg = await DBConnector.from_url(url, db_id=4, separator="|", name="CONFIG_DB")
        state = ProducerStateTable(appl, STATE, buffered=True)
        queue = ProducerTable(appl, QUEUE, buffered=True)
        ntf = NotificationProducer(appl, NTF)
        client = ZmqClient(self.endpoint)
        zmq = ZmqProducerStateTable(appl, ZMQ, client, db_persistence=False)
        kinds, weights = list(WEIGHTS), list(WEIGHTS.values())
        tick = 0.1
        per_tick = self.args.rate * tick
        loop = asyncio.get_running_loop()
        start, ticks, owed = loop.time(), 0, 0.0
        rng = self.rng
        try:
            while not self.stop_producing.is_set():
                owed += per_tick
                async with self.writing:
                    while owed >= 1:
                        owed -= 1
                        kind = rng.choices(kinds, weights)[0]
                        self.sent[kind] += 1
                        if kind == STATE:
                            key = f"k{rng.randrange(POOL[STATE])}"
                            if rng.random() < 0.15:
                                await state.delete(key)
                                self.state_truth.pop(key, None)
                            else:
                                fvs = self._fvs()
                                await state.set(key, [tuple(fv) for fv in fvs])
                                self.state_truth.setdefault(key, {}).update(fvs)
                        elif kind == QUEUE:
                            n = self._next()
                            if rng.random() < 0.15:
                                self.queue_truth[f"qd{n}"] = ("DEL", [])
                                await queue.delete(f"qd{n}")
                            else:
                                fvs = self._fvs()
                                self.queue_truth[f"q{n}"] = ("SET", fvs)
                                await queue.set(f"q{n}", [tuple(fv) for fv in fvs])
                        elif kind == SUB:
                            await self._subscriber_change(cfg)
                        elif kind == NTF:
                            data = f"n{self._next()}"
                            self.ntf_sent[data] = time.monotonic()
                            if await ntf.send("soak_event", data, [("seq", data)]) < 1:
                                self.ntf_no_subscriber += 1
                        else:
                            n = self._next()
                            if rng.random() < 0.15:
                                self.zmq_sent[f"zd{n}"] = (time.monotonic(), [])
                                await zmq.delete(f"zd{n}")
                            else:
                                fvs = self._fvs()
                                self.zmq_sent[f"zs{n}"] = (time.monotonic(), fvs)
                                await zmq.set(f"zs{n}", [tuple(fv) for fv in fvs])
                    await state.flush()
                    await queue.flush()
                ticks += 1
                await asyncio.sleep(max(0.0, start + ticks * tick - loop.time()))
        finally:
            await zmq.close()
            client.close()
            await appl.close()
            await cfg.close()

    async def _subscriber_change(self, cfg: DBConnector) -> None:
        key = f"p{self.rng.randrange(POOL[SUB])}"
        name = f"{SUB}|{key}"
        entry = self.sub_truth.get(key)
        r = self.rng.random()
        if entry and r < 0.1:
            await cfg.redis.delete(name)
            del self.sub_truth[key]
        elif entry and len(entry) > 1 and r < 0.25:
            gone = self.rng.choice(sorted(entry))
            await cfg.redis.hdel(name, gone)
            del entry[gone]
        else:
            fvs = dict(self._fvs())
            await cfg.redis.hset(name, mapping=fvs)
            self.sub_truth.setdefault(key, {}).update(fvs)

    # -- faults -------------------------------------------------------------------------------

    async def inject(self, name: str) -> None:
        fault = Fault(name, time.monotonic())
        self.faults.append(fault)
        if name == "client-kill":
            async with self.writing:
                admin = await DBConnector.from_url(self.server.url, db_id=0)
                try:
                    me = await admin.redis.execute_command("CLIENT", "ID")
                    for line in (await admin.redis.execute_command("CLIENT", "LIST")).splitlines():
                        client = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
                        if client["id"] != str(me):
                            await admin.redis.execute_command("CLIENT", "KILL", "ID", client["id"])
                finally:
                    await admin.close()
        elif name in ("sigterm", "sigkill"):
            async with self.replacing:
                await self.stop_daemon(signal.SIGTERM if name == "sigterm" else signal.SIGKILL, name)
                await self.start_daemon()
        elif name == "redis-restart":
            async with self.writing:
                proc = self.server.process
                assert proc is not None
                proc.terminate()
                code = await asyncio.to_thread(proc.wait, 30)
                if code != 0:
                    self.problems.append(f"redis-server exited {code} after SIGTERM")
                if proc.stderr:
                    proc.stderr.close()
                self.server.start()  # same port, socket and dir: the AOF is read back
        elif name == "redis-freeze":
            proc = self.server.process
            assert proc is not None
            os.kill(proc.pid, signal.SIGSTOP)
            try:
                await asyncio.sleep(self.args.freeze)
            finally:
                os.kill(proc.pid, signal.SIGCONT)
        fault.end = time.monotonic()

    async def faulting(self, until: float) -> None:
        i = 0
        while time.monotonic() + self.args.fault_interval < until:
            await asyncio.sleep(self.args.fault_interval)
            name = self.args.faults[i % len(self.args.faults)]
            i += 1
            print(f"  {time.monotonic() - self.t0:7.1f}s fault {name}", flush=True)
            await self.inject(name)

    # -- sampling -----------------------------------------------------------------------------

    def sample(self) -> None:
        life = self.lifetimes[-1]
        pid = life.pid
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            fds = len(os.listdir(f"/proc/{pid}/fd"))
        except (FileNotFoundError, ProcessLookupError):
            return
        rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
        life.samples.append((time.monotonic() - life.started, rss, fds))

    async def sampling(self) -> None:
        while True:
            await asyncio.sleep(self.args.sample_interval)
            async with self.replacing:
                life = self.lifetimes[-1]
                code = life.daemon.proc.poll()
                if code is not None:  # died by itself: a crash
                    life.exit, life.ended_by = code, "crash"
                    life.daemon.wait(1)
                    self.problems.append(f"daemon {life.pid} exited {code} by itself")
                    self.faults.append(Fault("crash", time.monotonic()))
                    await self.start_daemon()
                    self.faults[-1].end = time.monotonic()
                self.sample()

    # -- the run ------------------------------------------------------------------------------

    async def run(self) -> int:
        self.t0 = time.monotonic()
        await self.start_daemon()
        self.sample()
        until = self.t0 + self.args.minutes * 60
        sampler = asyncio.ensure_future(self.sampling())
        producer = asyncio.ensure_future(self.produce())
        faulting = asyncio.ensure_future(self.faulting(until))
        try:
            while time.monotonic() < until and not producer.done():
                await asyncio.sleep(1)
            await faulting
            self.stop_producing.set()
            await producer
            produced = time.monotonic() - self.t0
            records = Records(self.tmp / "records.jsonl")
            drained = await self.drain(records)
            sampler.cancel()
            async with self.replacing:
                self.sample()
                await self.stop_daemon(signal.SIGTERM, "end")
        finally:
            for task in (sampler, producer, faulting):
                task.cancel()
            if self.lifetimes and self.lifetimes[-1].daemon.proc.poll() is None:
                self.lifetimes[-1].daemon.kill()
        records.read()
        return self.report(records, produced, drained)

    def _pending(self, records: Records, sub_redis: dict[str, dict[str, str]]) -> bool:
        return (records.state != self.state_truth or records.sub_by_pid.get(self.lifetimes[-1].pid) != sub_redis
                or any(k not in records.queue for k in self.queue_truth))

    async def drain(self, records: Records) -> float:
        cfg = await DBConnector.from_url(self.server.url, db_id=4, separator="|", name="CONFIG_DB")
        try:
            self.sub_redis = {}
            async for name in cfg.redis.scan_iter(match=f"{SUB}|*", count=1000):
                self.sub_redis[name.split("|", 1)[1]] = await cfg.redis.hgetall(name)
        finally:
            await cfg.close()
        start = time.monotonic()
        last, stable_since = -1, start
        while time.monotonic() - start < self.args.drain:
            records.read()
            if records.lines != last:
                last, stable_since = records.lines, time.monotonic()
            if not self._pending(records, self.sub_redis) and time.monotonic() - stable_since > 3:
                break
            await asyncio.sleep(0.5)
        return time.monotonic() - start

    # -- the report ---------------------------------------------------------------------------

    def excused(self, kind: str, sent: float) -> bool:
        return any(f.name in TOUCHES[kind] | {"crash"} and f.start - 1 <= sent <= f.end + self.args.grace
                   for f in self.faults)

    def report(self, records: Records, produced: float, drained: float) -> int:
        args = self.args
        total = sum(self.sent.values())
        print(f"\nsoak: {produced / 60:.1f} min of stream, {total:,} changes "
              f"({total / produced:.0f}/s: " + ", ".join(f"{k} {v:,}" for k, v in self.sent.items())
              + f"), drain {drained:.1f} s, {records.lines:,} tasks handled")
        counts = Counter(f.name for f in self.faults)
        print("faults: " + ", ".join(f"{n} {counts[n]}" for n in (*FAULTS, "crash") if counts[n]))
        print("exits: " + ", ".join(f"{life.ended_by}={life.exit}" for life in self.lifetimes))

        # -- RSS and descriptors
        print(f"\n{'life':>4} {'pid':>8} {'ended by':>13} {'secs':>6} {'n':>3}  "
              f"{'RSS MB start/median/max/end':>29}  {'fds start/median/max/end':>24}  {'warm->end':>16}")
        baselines: list[tuple[int, int]] = []
        for i, life in enumerate(self.lifetimes):
            s = life.samples
            if not s:
                print(f"{i:>4} {life.pid:>8} {life.ended_by:>13}   (no samples)")
                continue
            rss, fds = [x[1] for x in s], [x[2] for x in s]
            warm = [x for x in s if x[0] >= args.warmup]
            verdict = "too short"
            if warm:
                baselines.append((warm[0][1], warm[0][2]))
            if len(warm) >= 2:
                d_rss, d_fds = warm[-1][1] - warm[0][1], warm[-1][2] - warm[0][2]
                flat = d_rss <= FLAT_KB and d_fds <= FLAT_FDS
                verdict = f"{d_rss / MB:+.1f}MB {d_fds:+d}fd {'flat' if flat else 'GROWS'}"
                if not flat:
                    self.problems.append(f"daemon {life.pid}: RSS {d_rss / MB:+.1f} MB, fds {d_fds:+d} after warm-up")
            print(f"{i:>4} {life.pid:>8} {life.ended_by:>13} {s[-1][0]:>6.0f} {len(s):>3}  "
                  f"{rss[0] / MB:6.1f} {statistics.median(rss) / MB:6.1f} {max(rss) / MB:6.1f} {rss[-1] / MB:6.1f}"
                  f"   {fds[0]:5d} {statistics.median(fds):5.0f} {max(fds):5d} {fds[-1]:5d}   {verdict}")
        if len(baselines) >= 2:
            d_rss, d_fds = baselines[-1][0] - baselines[0][0], baselines[-1][1] - baselines[0][1]
            flat = d_rss <= FLAT_KB and d_fds <= FLAT_FDS
            print(f"first sample after {args.warmup:.0f}s warm-up, last vs first lifetime that lived that long: "
                  f"RSS {d_rss / MB:+.1f} MB, "
                  f"fds {d_fds:+d} ({'flat' if flat else 'GROWS'}; all lifetimes: RSS "
                  f"{min(b[0] for b in baselines) / MB:.1f}-{max(b[0] for b in baselines) / MB:.1f} MB, "
                  f"fds {min(b[1] for b in baselines)}-{max(b[1] for b in baselines)})")
            if not flat:
                self.problems.append(f"across lifetimes: RSS {d_rss / MB:+.1f} MB, fds {d_fds:+d}")

        # -- state and subscriber tables
        print()
        last_sub = records.sub_by_pid.get(self.lifetimes[-1].pid, {})
        for name, table, truth in ((STATE, records.state, self.state_truth), (SUB, last_sub, self.sub_redis)):
            lost = [k for k in truth if k not in table]
            stale = [k for k in truth if k in table and table[k] != truth[k]]
            extra = [k for k in table if k not in truth]
            print(f"{name:12} keys {len(truth):5}  lost {len(lost)}  stale {len(stale)}  extra {len(extra)}")
            if lost or stale or extra:
                self.problems.append(f"{name}: lost {lost[:3]} stale {stale[:3]} extra {extra[:3]}")
        gone = [k for k in records.sub if k not in self.sub_redis]
        print(f"{'':12} (over all lifetimes {len(gone)} entries never got their DEL: deleted while the daemon was "
              "down; a subscriber table reads the entries that exist at start, as the C++ one)")
        if self.sub_redis != self.sub_truth:
            self.problems.append("CONFIG_DB differs from what the producers wrote (Redis lost writes?)")

        # -- queue: at least once
        missing, wrong, dup_ok, dup_bad = 0, 0, 0, 0
        ended = {life.pid: life.ended_by for life in self.lifetimes}
        for key, (op, fvs) in self.queue_truth.items():
            handled = records.queue.get(key, [])
            if not handled:
                missing += 1
                continue
            if any((h_op, h_fvs) != (op, fvs) for _, h_op, h_fvs in handled):
                wrong += 1
            for (a, _, _), (b, _, _) in itertools.pairwise(handled):
                if a != b and ended.get(a) in ("sigkill", "crash"):
                    dup_ok += 1
                else:
                    dup_bad += 1
        print(f"{QUEUE:12} ops {len(self.queue_truth):6}  lost {missing}  wrong {wrong}  "
              f"duplicates {dup_ok} across SIGKILL/crash, {dup_bad} otherwise")
        if missing or wrong or dup_bad:
            self.problems.append(f"{QUEUE}: lost {missing}, wrong fields {wrong}, "
                                 f"duplicates not across a kill {dup_bad}")

        # -- at most once: notifications and zmq
        for name, sent, seen in ((NTF, self.ntf_sent, records.ntf),
                                 (ZMQ, {k: t for k, (t, _) in self.zmq_sent.items()}, records.zmq)):
            missed = [k for k in sent if k not in seen]
            outside = [k for k in missed if not self.excused(name, sent[k])]
            dups = sum(n - 1 for n in seen.values() if n > 1)
            print(f"{name:12} sent {len(sent):6}  received {sum(1 for k in sent if k in seen):6}  "
                  f"lost {len(missed)} ({len(missed) - len(outside)} in fault windows, {len(outside)} outside)  "
                  f"duplicates {dups}" + (f"  sent with no subscriber {self.ntf_no_subscriber}" if name == NTF else ""))
            if outside or dups:
                when = sorted(round(sent[k] - self.t0, 1) for k in outside)[:10]
                self.problems.append(f"{name}: {len(outside)} lost outside fault windows (at s {when}), "
                                     f"{dups} duplicates")
        wrong_zmq = sum(1 for k, (_, zfvs) in self.zmq_sent.items()
                        if k in records.zmq_fvs and records.zmq_fvs[k] != zfvs)
        if wrong_zmq:
            self.problems.append(f"{ZMQ}: {wrong_zmq} changes with other fields than sent")

        errors: Counter[str] = Counter()
        for life in self.lifetimes:
            for e in life.daemon.logs():
                if e.get("level") in ("error", "critical") or "Traceback" in str(e.get("event", "")):
                    errors[str(e.get("event"))[:100]] += 1
        if errors:
            print("daemon error lines: " + "; ".join(f"{n}x {ev!r}" for ev, n in errors.most_common(8)))
        samples = [{"pid": life.pid, "ended_by": life.ended_by, "exit": life.exit,
                    "samples": [{"age_s": round(a, 1), "rss_kb": r, "fds": f} for a, r, f in life.samples]}
                   for life in self.lifetimes]
        (self.tmp / "samples.json").write_text(json.dumps(samples, indent=1))
        print(f"work dir: {self.tmp} (samples.json: every RSS/fd sample)")
        if self.problems:
            print("\nFAIL:\n  " + "\n  ".join(self.problems))
            return 1
        print("\nOK: RSS and descriptors flat, 0 lost")
        return 0


async def main(args: argparse.Namespace, tmp: Path) -> int:
    server = EmbeddedRedis(extra_args=["--appendonly", "yes", "--appendfsync", "everysec",
                                       "--notify-keyspace-events", "AKE"]).start()
    try:
        soak = Soak(args, tmp, server, f"tcp://127.0.0.1:{free_port()}")
        soak.config()
        print(f"soak: {args.minutes} min, a fault every {args.fault_interval:.0f} s ({', '.join(args.faults)}), "
              f"{args.rate:.0f} changes/s, work dir {tmp}", flush=True)
        return await soak.run()
    finally:
        server.stop()


def cli() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=float, default=30.0)
    p.add_argument("--fault-interval", type=float, default=60.0)
    p.add_argument("--rate", type=float, default=300.0, help="changes a second, all kinds together")
    p.add_argument("--faults", type=lambda v: v.split(","), default=list(FAULTS),
                   help=f"the rotation, comma-separated, of: {','.join(FAULTS)} (all by default)")
    p.add_argument("--sample-interval", type=float, default=10.0)
    p.add_argument("--warmup", type=float, default=30.0, help="seconds after a start before the RSS baseline")
    p.add_argument("--freeze", type=float, default=5.0, help="seconds Redis stays stopped (SIGSTOP)")
    p.add_argument("--grace", type=float, default=5.0, help="seconds after a fault's recovery still in its window")
    p.add_argument("--drain", type=float, default=120.0, help="at most this long to wait for the drain")
    p.add_argument("--workdir", type=Path, help="keep logs, records and captures here (default: a temp dir, removed)")
    args = p.parse_args()
    if not args.faults or set(args.faults) - set(FAULTS):
        p.error(f"--faults: a comma-separated list of {', '.join(FAULTS)}")
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
        return asyncio.run(main(args, args.workdir.resolve()))
    with tempfile.TemporaryDirectory(prefix="swssd-soak-") as tmp:
        return asyncio.run(main(args, Path(tmp)))


if __name__ == "__main__":
    sys.exit(cli())
