"""The table library against the C++ sonic-swss-common, side by side (issue 12).

    .venv/bin/python bench/bench_cpp.py --swss-common DIR [--keys 100000] [--keys-slow 20000]
                                        [--repeat 3] [--unix] [--only NAME ...] [-v]

For each case the same work runs twice on one private redis-server (swssd.redis.embedded_redis, no
persistence): once in bench/cpp/tables_bench.cpp, built here against the sonic-swss-common tree
given by --swss-common or $SWSS_COMMON_DIR (its .lua scripts must be in /usr/share/swss/, where
redisapi.h loads them), and once with swssd on uvloop in this process. Both connect the same way
(loopback TCP, or the unix socket with --unix), to database 0, and handle the same data: keys
"Ethernet<i>" of 4 fields, 128 keys a batched or buffered call, pop batch 128.

  single set     ProducerStateTable.set, one call (one round trip) a key, on --keys-slow keys;
                 swssd also from 16 coroutines at once on one connector (calls made while others
                 are in flight written together), and with send_ahead=2 (sets overlap: no
                 longer one round trip a key), against the same C++ single-set figure; and the
                 same EVALSHA from a bare asyncio protocol (no swssd: pack, write, a future),
                 the floor of any asyncio client on this loop and machine
  batched set    C++ set(vector<KeyOpFieldsValuesTuple>) / swssd set_many, 128 keys a call;
                 swssd also with send_ahead=1 and 2 (a call returns once sent while 1 or 2
                 before it wait for their answers; timed up to the last answer, at flush())
  buffered set   buffered producer, flush every 128 keys
  CST drain      ConsumerStateTable pops until empty, of a key set pre-filled with batched sets
  CT drain       ConsumerTable pops until empty, of an op queue pre-filled by a buffered
                 ProducerTable; swssd's drains are also run with prefetch (the next pops sent
                 while the last batch is handed over), against the same C++ figure: the
                 library's prefetch=True and prefetch=2 (one or two pops ahead, the C++
                 scripts), and the daemon's own pop (swssd.orch.reliable_pop: its own
                 scripts, which also record each batch, and its own prefetch)

Timing: a producer over its calls only (the buffered one up to the end of its last flush); a
consumer from the start of the pop that returned the first key to the end of the one that returned
the last. Pre-filling, connecting, script loading and building the input are not timed. Rounds are
interleaved: C++ first in odd rounds, swssd first in even ones; each figure is the median of
--repeat rounds and the ratio swssd/C++ divides the two medians of this run (the range of the
per-round ratios is printed beside it). "redis %" is the share of the timed wall time that Redis
spent executing the commands the client sent (INFO commandstats after CONFIG RESETSTAT, top-level
commands only, as in bench_tables.py), median over rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import gc
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

import hiredis
import redis
import uvloop

import swssd
from swssd import ConsumerStateTable, ConsumerTable, DBConnector, ProducerStateTable, ProducerTable
from swssd.lua import PST_SET
from swssd.redis.embedded_redis import EmbeddedRedis

HERE = Path(__file__).resolve().parent
TABLE = "BENCH_TABLE"
BATCH = 128
#: Commands a client sends itself; whatever else commandstats lists ran inside a script.
TOP_LEVEL = {"evalsha", "eval", "script", "ping", "select", "client", "hello"}
#: Where redisapi.h's loadLuaScript() reads the C++ library's scripts (hard-coded there).
LUA_DIR = Path("/usr/share/swss")
LUA_NEEDED = ("consumer_state_table_pops.lua", "consumer_table_pops.lua", "producer_state_table_apply_view.lua")

Entry = tuple[str, list[tuple[str, str]]]
#: the single set's floor variant (bare_asyncio_set)
FLOOR = "bare asyncio client (not swssd: the floor)"


def make_entries(n: int) -> list[Entry]:
    """n keys of 4 fields; tables_bench.cpp builds the same."""
    return [
        (f"Ethernet{i}", [("alias", f"etp{i}"), ("speed", "100000"), ("mtu", "9100"), ("admin_status", "up")])
        for i in range(n)
    ]


# -- the C++ side -----------------------------------------------------------------------------


def check_tree(swss_common: Path | None) -> Path:
    """The sonic-swss-common tree, built; exits with a clear message when it is not there."""
    if swss_common is None:
        sys.exit(
            "bench_cpp.py needs a built sonic-swss-common tree: pass --swss-common DIR or set "
            "$SWSS_COMMON_DIR (built with ./autogen.sh && ./configure --disable-yangmodules; "
            "make common/cfg_schema.h; make common/libswsscommon.la)"
        )
    tree = swss_common.resolve()
    missing = [
        p
        for p in ("common/dbconnector.h", "common/producerstatetable.h", "common/.libs/libswsscommon.so")
        if not (tree / p).exists()
    ]
    if missing:
        sys.exit(f"{tree} is not a built sonic-swss-common tree: missing {', '.join(missing)}")
    absent = [name for name in LUA_NEEDED if not (LUA_DIR / name).exists()]
    if absent:
        sys.exit(
            f"the C++ library loads its Lua scripts from {LUA_DIR}/, which lacks {', '.join(absent)}: "
            f"copy {tree}/common/*.lua there"
        )
    return tree


def build_cpp(tree: Path, out_dir: Path) -> Path:
    """Compile bench/cpp/tables_bench.cpp against the tree's headers and libswsscommon."""
    binary = out_dir / "tables_bench"
    libs = tree / "common" / ".libs"
    cmd = [
        "g++",
        "-O2",
        "-std=c++14",
        f"-I{tree / 'common'}",
        f"-I{tree}",
        "-I/usr/include/libnl3",
        str(HERE / "cpp" / "tables_bench.cpp"),
        "-o",
        str(binary),
        f"-L{libs}",
        f"-Wl,-rpath,{libs}",
        "-lswsscommon",
        "-lhiredis",
        "-lpthread",
    ]
    subprocess.run(cmd, check=True)
    return binary


# -- the swssd side ---------------------------------------------------------------------------


def _pst(db: DBConnector, fast: bool, buffered: bool = False, send_ahead: int = 0) -> ProducerStateTable:
    """The library's producer; with fast, its opt-in fast scripts, with send_ahead its opt-in
    writes ahead of their answers (where the checkout has them)."""
    options = {**({"fast_scripts": True} if fast else {}), **({"send_ahead": send_ahead} if send_ahead else {})}
    return ProducerStateTable(db, TABLE, buffered=buffered, **options)


async def pst_set(db: DBConnector, entries: list[Entry], fast: bool = False, send_ahead: int = 0) -> None:
    pst = _pst(db, fast, send_ahead=send_ahead)
    for key, fvs in entries:
        await pst.set(key, fvs)
    await pst.flush()  # with send_ahead: the last answers are in the time


class _BareClient(asyncio.Protocol):
    """The least an asyncio client does for one call: pack, write, a future that data_received
    resolves from the hiredis reader. No swssd layer, no error handling, no reconnection."""

    def __init__(self) -> None:
        self.reader = hiredis.Reader()
        self.waiting: collections.deque[asyncio.Future[object]] = collections.deque()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            self.waiting.popleft().set_result(reply)

    async def call(self, *args: str) -> object:
        assert self.transport is not None
        future = asyncio.get_running_loop().create_future()
        self.waiting.append(future)
        self.transport.write(hiredis.pack_command(args))
        reply = await future
        if isinstance(reply, Exception):
            raise reply
        return reply


async def bare_asyncio_set(db: DBConnector, entries: list[Entry]) -> None:
    """The single set's EVALSHA (the C++ script, the same keys and arguments as
    ProducerStateTable.set) from _BareClient: what any asyncio client on this loop costs a call,
    the floor under swssd's single set. Its connection is opened in the timed part (a
    millisecond of the run)."""
    pst = ProducerStateTable(db, TABLE)
    await db.load_scripts((PST_SET,))
    spec = db.connection_spec
    loop = asyncio.get_running_loop()
    if spec.path:
        transport, client = await loop.create_unix_connection(_BareClient, spec.path)
    else:
        transport, client = await loop.create_connection(_BareClient, spec.host, spec.port)
    try:
        head = ("EVALSHA", PST_SET.sha)
        for key, fvs in entries:
            state_hash = pst.state_prefix + pst.key_name(key)
            await client.call(
                *head, str(2 + len(fvs)), pst.channel, pst.key_set, *([state_hash] * len(fvs)),
                "G", key, *chain.from_iterable(fvs),
            )
    finally:
        transport.close()


async def pst_set_concurrent(db: DBConnector, entries: list[Entry], coroutines: int = 16) -> None:
    """Single sets from many coroutines at once on one connector (the keys dealt out round-robin)."""
    await asyncio.gather(*(pst_set(db, entries[i::coroutines]) for i in range(coroutines)))


async def pst_set_many(db: DBConnector, entries: list[Entry], fast: bool = False, send_ahead: int = 0) -> None:
    pst = _pst(db, fast, send_ahead=send_ahead)
    for i in range(0, len(entries), BATCH):
        await pst.set_many(entries[i : i + BATCH])
    await pst.flush()


async def pst_buffered(db: DBConnector, entries: list[Entry], fast: bool = False) -> None:
    pst = _pst(db, fast, buffered=True)
    for i, (key, fvs) in enumerate(entries, 1):
        await pst.set(key, fvs)
        if i % BATCH == 0:
            await pst.flush()
    await pst.flush()


async def pt_buffered(db: DBConnector, entries: list[Entry]) -> None:
    pt = ProducerTable(db, TABLE, buffered=True)
    for i, (key, fvs) in enumerate(entries, 1):
        await pt.set(key, fvs)
        if i % BATCH == 0:
            await pt.flush()
    await pt.flush()


Popper = Callable[[], Awaitable[int]]


def library_consumer(kind: type, prefetch: int, fast: bool = False) -> Callable[[DBConnector], Popper]:
    def make(db: DBConnector) -> Popper:
        options = {**({"prefetch": prefetch} if prefetch else {}), **({"fast_scripts": True} if fast else {})}
        table = kind(db, TABLE, pop_batch_size=BATCH, **options)

        async def pop() -> int:
            return len(await table.pops())

        return pop

    return make


def daemon_consumer(kind: type) -> Callable[[DBConnector], Popper]:
    """The daemon's pop (swssd.orch.reliable_pop, where the checkout has it): its own pop scripts,
    which also record each batch in Redis, and its prefetch. The record is not cleared here."""

    def make(db: DBConnector) -> Popper:
        from swssd.orch.pending import PendingMap
        from swssd.orch.reliable_pop import ReliablePop

        reliable = ReliablePop(kind(db, TABLE, pop_batch_size=BATCH), PendingMap(), instance="bench")

        async def pop() -> int:
            return sum(len(batch.tasks) for batch in await reliable.pop())

        return pop

    return make


def prefetch_consumers(kind: type) -> list[tuple[str, Callable[[DBConnector], Popper]]]:
    """swssd's drains with prefetch, as this checkout offers them: the library's opt-in
    `prefetch=True` and, where it takes a number, `prefetch=2` (the C++ scripts), and the
    daemon's ReliablePop (its own scripts)."""
    out = []
    parameter = inspect.signature(kind).parameters.get("prefetch")
    if parameter is not None:
        out.append(("swssd, prefetch=True", library_consumer(kind, prefetch=True)))
        if parameter.annotation in (int, "int"):
            out.append(("swssd, prefetch=2", library_consumer(kind, prefetch=2)))
    try:
        import swssd.orch.reliable_pop  # noqa: F401
    except ImportError:
        return out
    out.append(("swssd, daemon's pop + prefetch", daemon_consumer(kind)))
    return out


# -- cases ------------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    mode: str  # tables_bench.cpp's mode
    keys: int
    #: swssd variants: (label, producer coroutine) or (label, consumer factory)
    variants: list[tuple[str, Callable]]  # type: ignore[type-arg]
    #: the untimed pre-fill of a consumer case
    prefill: Callable[[DBConnector, list[Entry]], Awaitable[None]] | None = None
    rates: dict[str, list[float]] = field(default_factory=dict)
    busy: dict[str, list[float]] = field(default_factory=dict)

    @property
    def consumer(self) -> bool:
        return self.prefill is not None


def make_cases(keys: int, slow: int) -> list[Case]:
    cases = [
        Case("ProducerStateTable single set (1 call a key)", "pst_set", slow,
             [("swssd", pst_set), ("swssd, 16 coroutines at once", pst_set_concurrent),
              (FLOOR, bare_asyncio_set)]),
        Case(f"ProducerStateTable batched set ({BATCH} a call)", "pst_batched", keys, [("swssd", pst_set_many)]),
        Case(f"ProducerStateTable buffered set (flush every {BATCH})", "pst_buffered", keys, [("swssd", pst_buffered)]),
        Case(
            f"ConsumerStateTable drain (pop batch {BATCH})",
            "cst_drain",
            keys,
            [("swssd", library_consumer(ConsumerStateTable, prefetch=False))],
            prefill=pst_set_many,
        ),
        Case(
            f"ConsumerTable drain (pop batch {BATCH})",
            "ct_drain",
            keys,
            [("swssd", library_consumer(ConsumerTable, prefetch=False))],
            prefill=pt_buffered,
        ),
    ]
    for case, kind in ((cases[3], ConsumerStateTable), (cases[4], ConsumerTable)):
        case.variants += prefetch_consumers(kind)
    if "fast_scripts" in inspect.signature(ProducerStateTable).parameters:
        for case, producer in zip(cases[:3], (pst_set, pst_set_many, pst_buffered)):
            case.variants.append(("swssd, fast scripts", functools.partial(producer, fast=True)))
        cases[3].variants.append(("swssd, fast scripts", library_consumer(ConsumerStateTable, False, fast=True)))
    if "fast_scripts" in inspect.signature(ConsumerTable).parameters:
        cases[4].variants.append(("swssd, fast scripts", library_consumer(ConsumerTable, False, fast=True)))
    if "send_ahead" in inspect.signature(ProducerStateTable).parameters:
        cases[0].variants.append(("swssd, send_ahead=2 (not 1 trip a key)", functools.partial(pst_set, send_ahead=2)))
        for depth in (1, 2):
            cases[1].variants.append((f"swssd, send_ahead={depth}", functools.partial(pst_set_many, send_ahead=depth)))
        cases[1].variants.append(
            ("swssd, fast scripts + send_ahead=2", functools.partial(pst_set_many, fast=True, send_ahead=2))
        )
    return cases


# -- measuring --------------------------------------------------------------------------------


class Bench:
    def __init__(self, server: EmbeddedRedis, unix: bool, binary: Path, db_config: Path) -> None:
        self.server = server
        self.unix = unix
        self.binary = binary
        self.db_config = db_config
        self.url = f"unix://{server.unix_socket}" if unix else server.url
        self.cpp_address = str(server.unix_socket) if unix else f"127.0.0.1:{server.port}"
        self.admin = redis.Redis(unix_socket_path=str(server.unix_socket), decode_responses=True)
        self.loads: list[float] = []

    def top_level_usec(self) -> int:
        stats = self.admin.info("commandstats")
        # Redis 7 names subcommands "script|load", "client|setinfo", ...
        return sum(v["usec"] for k, v in stats.items() if k.removeprefix("cmdstat_").split("|")[0] in TOP_LEVEL)

    async def prepare(self, case: Case) -> None:
        """Empty database; for a consumer, the pre-filled table (not timed)."""
        self.admin.flushall()
        if case.prefill is not None:
            db = await DBConnector.from_url(self.url, db_id=0)
            try:
                await case.prefill(db, make_entries(case.keys))
            finally:
                await db.close()
            gc.collect()

    def check(self, case: Case) -> None:
        """Both sides must leave the same state: every key in the table (consumers) or in the key
        set and state hashes (producers), and nothing else of the table's."""
        key = "Ethernet7"
        if case.consumer:
            want_size, sample = case.keys, f"{TABLE}:{key}"
        else:
            want_size, sample = case.keys + 1, f"_{TABLE}:{key}"
            assert self.admin.scard(f"{TABLE}_KEY_SET") == case.keys, case.name
        # the daemon's pop leaves its in-flight record (_SWSSD_INFLIGHT:...) besides
        size = self.admin.dbsize() - sum(1 for _ in self.admin.scan_iter("_SWSSD_*"))
        assert size == want_size, (case.name, size, want_size)
        assert self.admin.hgetall(sample) == {
            "alias": "etp7",
            "speed": "100000",
            "mtu": "9100",
            "admin_status": "up",
        }, (case.name, sample)

    def run_cpp(self, case: Case) -> tuple[float, float]:
        """(seconds by the C++ program's clock, Redis busy share)."""
        proc = subprocess.Popen(
            [str(self.binary), case.mode, str(self.db_config), self.cpp_address, TABLE, str(case.keys), str(BATCH)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        line = proc.stdout.readline().strip()
        if line != "ready":
            proc.kill()
            raise RuntimeError(f"{case.mode}: C++ program said {line!r} instead of ready")
        self.admin.config_resetstat()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, _ = proc.communicate(timeout=900)
        usec = self.top_level_usec()
        if proc.returncode != 0:
            raise RuntimeError(f"{case.mode}: C++ program failed ({proc.returncode})")
        result = json.loads(out.strip().splitlines()[-1])
        if result["count"] != case.keys:
            raise RuntimeError(f"{case.mode}: C++ handled {result['count']} keys, expected {case.keys}")
        seconds = result["ns"] / 1e9
        return seconds, usec / 1e6 / seconds

    async def run_swssd(self, case: Case, variant: Callable) -> tuple[float, float]:  # type: ignore[type-arg]
        db = await DBConnector.from_url(self.url, db_id=0)
        try:
            if case.consumer:
                pop = variant(db)
                entries: list[Entry] = []
            else:
                entries = make_entries(case.keys)
            gc.collect()
            await db.ping()  # the connection is open before the clock starts
            self.admin.config_resetstat()
            if case.consumer:
                got, first, last = 0, 0, 0
                while True:
                    start = time.perf_counter_ns()
                    n = await pop()
                    end = time.perf_counter_ns()
                    if not n:
                        break
                    first = first or start
                    last = end
                    got += n
                seconds = (last - first) / 1e9
            else:
                start = time.perf_counter_ns()
                await variant(db, entries)
                seconds = (time.perf_counter_ns() - start) / 1e9
                got = case.keys
            usec = self.top_level_usec()
        finally:
            await db.close()
        if got != case.keys:
            raise RuntimeError(f"{case.name}: swssd handled {got} keys, expected {case.keys}")
        return seconds, usec / 1e6 / seconds

    async def measure(self, case: Case, side: str, round_: int, verbose: bool) -> None:
        await self.prepare(case)
        self.loads.append(os.getloadavg()[0])
        if side == "C++":
            seconds, busy = self.run_cpp(case)
        else:
            variant = dict(case.variants)[side]
            seconds, busy = await self.run_swssd(case, variant)
        self.check(case)
        case.rates.setdefault(side, []).append(case.keys / seconds)
        case.busy.setdefault(side, []).append(busy)
        if verbose:
            print(
                f"  round {round_ + 1} {case.mode:12} {side:32} {case.keys / seconds:10,.0f} keys/s "
                f"(redis {100 * busy:3.0f} %, load {self.loads[-1]:.2f})",
                flush=True,
            )


def provenance() -> str:
    """Where swssd was imported from, with its commit when that is a git work tree."""
    where = Path(swssd.__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--", "."], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"swssd from {where}"
    return f"swssd from {where} at commit {commit}" + (" (with uncommitted changes)" if dirty else "")


async def main(args: argparse.Namespace) -> None:
    tree = check_tree(args.swss_common)
    cases = make_cases(args.keys, args.keys_slow)
    if args.only:
        cases = [c for c in cases if any(s.lower() in (c.name + " " + c.mode).lower() for s in args.only)]

    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis() as server:
        binary = build_cpp(tree, Path(tmp))
        db_config = server.write_database_config(Path(tmp) / "database_config.json")
        bench = Bench(server, args.unix, binary, db_config)
        version = bench.admin.info("server")["redis_version"]
        cpp_commit = (
            subprocess.run(
                ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
            ).stdout.strip()
            or "?"
        )
        print(
            f"swssd vs C++ sonic-swss-common ({tree}, commit {cpp_commit}), side by side: "
            f"redis-server {version} (private, no persistence), "
            f"{'unix socket' if args.unix else 'loopback TCP'} for both, database 0, 4 fields a key, "
            f"pop batch {BATCH}; swssd on uvloop {uvloop.__version__}, Python {sys.version.split()[0]}"
        )
        print(provenance())
        print(
            f"{os.cpu_count()} CPUs, 1-min load average at start {os.getloadavg()[0]:.2f} "
            "(other processes on the machine compete with both sides and redis-server)"
        )
        print(
            f"{args.keys:,} keys a run, single set {args.keys_slow:,}; medians of {args.repeat} interleaved rounds",
            flush=True,
        )

        for round_ in range(args.repeat):
            for case in cases:
                swssd_sides = [label for label, _ in case.variants]
                sides = ["C++", *swssd_sides] if round_ % 2 == 0 else [*swssd_sides, "C++"]
                for side in sides:
                    await bench.measure(case, side, round_, args.verbose)
            if not args.verbose:
                print(f"  round {round_ + 1} of {args.repeat} done (load {os.getloadavg()[0]:.2f})", flush=True)

        head = (
            f"{'case':50} {'keys':>8} {'C++ keys/s':>11} {'swssd keys/s':>13} {'swssd/C++':>9} "
            f"{'per round':>11} {'redis % C++':>11} {'swssd':>6}"
        )
        print()
        print(head)
        print("-" * len(head))
        for case in cases:
            cpp_rates = case.rates["C++"]
            cpp = statistics.median(cpp_rates)
            cpp_busy = statistics.median(case.busy["C++"])
            for i, (label, _) in enumerate(case.variants):
                rates = case.rates[label]
                rate = statistics.median(rates)
                per_round = [s / c for s, c in zip(rates, cpp_rates)]
                first = i == 0
                print(
                    f"{case.name if first else '  ' + label:50} {case.keys:>8,} "
                    f"{f'{cpp:,.0f}' if first else '':>11} {rate:>13,.0f} {rate / cpp:>9.2f} "
                    f"{f'{min(per_round):.2f}-{max(per_round):.2f}':>11} "
                    f"{f'{100 * cpp_busy:.0f}%' if first else '':>11} "
                    f"{f'{100 * statistics.median(case.busy[label]):.0f}%':>6}"
                )
        for case in cases:
            if FLOOR in case.rates:
                floor, own = case.rates[FLOOR], case.rates[case.variants[0][0]]
                per_round = [s / f for s, f in zip(own, floor)]
                print(
                    f"{case.name}: swssd / {FLOOR} {statistics.median(own) / statistics.median(floor):.2f} "
                    f"(per round {min(per_round):.2f}-{max(per_round):.2f})"
                )
        print(
            f"1-min load average during the run: {min(bench.loads):.2f}-{max(bench.loads):.2f} "
            f"(end {os.getloadavg()[0]:.2f})"
        )
        if args.verbose:
            for case in cases:
                for side, rates in case.rates.items():
                    print(f"  {case.mode:12} {side:32} runs keys/s: " + ", ".join(f"{r:,.0f}" for r in rates))
        bench.admin.close()


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--swss-common",
        type=Path,
        default=os.environ.get("SWSS_COMMON_DIR") or None,
        help="a built sonic-swss-common tree (default $SWSS_COMMON_DIR)",
    )
    p.add_argument("--keys", type=int, default=100_000, help="keys a run (default 100000)")
    p.add_argument("--keys-slow", type=int, default=20_000, help="keys a single-set run (default 20000)")
    p.add_argument("--repeat", type=int, default=3, help="interleaved rounds; medians are printed (default 3)")
    p.add_argument("--unix", action="store_true", help="both sides over the unix socket instead of loopback TCP")
    p.add_argument("--only", nargs="*", help="run only cases whose name or mode contains one of these")
    p.add_argument("-v", "--verbose", action="store_true", help="print every measurement")
    return p.parse_args()


if __name__ == "__main__":
    uvloop.run(main(parse_args()))
