"""Replay benchmark (issues 5 and 12): `swssd replay state` in Spark local mode against a plain-Python fold.

Generates swssd JSON Lines captures of 1M and 4M events (20 tables x 1,000 keys, SET of 1 to 4
of 4 fields or DEL, 8 events per timestamp as in one pop batch, rotated into ~64 MiB files like
the capture writer's), then for each size runs, interleaved round by round (the order alternating,
so that neither side always runs first on a busy machine):
  spark  - `replay state` through swssd.replay.cli.main in one warm SparkSession (local[*]);
           the session start-up (JVM) is measured once, apart;
  python - a single-process fold of the same files (json.loads each line, oldest file first),
           the obvious script an engineer would write;
and checks after every Spark run that both give the same state. Medians, each run's figure and
the 1-minute load average at each run are printed (the machine may be shared). The 4M/1M time
ratio shows how the job scales (target <= 4.5: linear). `--mixed` records the last 5 tables as
subscriber tables (a SET is the full entry, so it replaces) and makes 1 event in 20 a
notification (never table state), to time and check those kinds too.

`--segment` also compacts each size's captures once into a columnar capture segment (`swssd replay
compact`, timed apart: paid once per capture) and adds a third side to the rounds:
  segment - `replay state` over the segment (Parquet: no JSON parsing), checked against the fold
            like the other; the order of the three sides rotates from round to round.

`--report` times `swssd replay report` (the HTML page, issue 28) against `replay stats` instead,
on the same captures in the same warm session, interleaved round by round, and prints the page's
size (target: about the time of `stats`, under 5 MB).

`--cli-rounds N` (default 5; 0 skips it) also times the whole command on a 2-event capture, as a
user runs it: `python -m swssd.replay state` and `swssd replay state` in a fresh process, JVM
start-up included; with the class archive (swssd/replay/jvm.py), without it, and with `--baseline
DIR` an earlier swssd tree.

Run: .venv/bin/python bench/bench_replay.py [--small] [--mixed] [--segment] [--report] [--sizes 1000000 4000000]
     [--rounds 3] [--cli-rounds 5] [--keep DIR] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TABLES = 20
KEYS = 1_000
FIELDS = ["alias", "speed", "mtu", "admin_status"]
PER_TS = 8
FILE_BYTES = 64 * 1024 * 1024
START_US = 1_795_651_200_000_000  # 2026-11-25T00:00:00Z
SUBSCRIBER_TABLES = 5  # with --mixed: the last ones
NOTIFICATION_SHARE = 0.05  # with --mixed

State = dict[tuple[str, str, str, str], dict[str, str]]


def iso(us: int) -> str:
    s, frac = divmod(us, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + f".{frac:06d}Z"


def generate(directory: Path, events: int, seed: int = 1, mixed: bool = False) -> int:
    """Write `events` capture lines into rotated files; returns the bytes written."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    chunks: list[Path] = []
    out = None
    size = total = 0
    ts = ""
    for i in range(events):
        if i % PER_TS == 0:
            ts = iso(START_US + (i // PER_TS) * 1_000)
        t = rng.randrange(TABLES)
        table = f"BENCH_{t:02d}_TABLE"
        key = f"Ethernet{rng.randrange(KEYS)}"
        kind = ',"kind":"subscriber"' if mixed and t >= TABLES - SUBSCRIBER_TABLES else ""
        if mixed and rng.random() < NOTIFICATION_SHARE:
            table, kind, op = "BENCH_NOTIFICATIONS", ',"kind":"notification"', "port_state_change"
            fvs = f'[["oper_status","{rng.choice(["up", "down"])}"]]'
        elif rng.random() < 0.1:
            op, fvs = "DEL", "[]"
        else:
            fields = rng.sample(FIELDS, rng.randint(1, 4))
            op = "SET"
            fvs = "[" + ",".join(f'["{f}","v{i}"]' for f in fields) + "]"
        line = (f'{{"ts":"{ts}","host":"bench","db":"APPL_DB","table":"{table}","key":"{key}",'
                f'"op":"{op}","fvs":{fvs},"seq":{i + 1}{kind}}}\n').encode()
        if out is None or size + len(line) > FILE_BYTES:
            if out is not None:
                out.close()
            chunks.append(directory / f"chunk{len(chunks)}")
            out = open(chunks[-1], "wb")  # noqa: SIM115
            size = 0
        out.write(line)
        size += len(line)
        total += len(line)
    if out is not None:
        out.close()
    # the newest chunk is the live file, older ones .1, .2 ... as after rotation
    for age, chunk in enumerate(reversed(chunks)):
        chunk.rename(directory / ("swssd.capture.jsonl" + (f".{age}" if age else "")))
    return total


def capture_files_oldest_first(directory: Path) -> list[Path]:
    def age(p: Path) -> int:
        suffix = p.name.rsplit(".", 1)[-1]
        return int(suffix) if suffix.isdigit() else 0

    return sorted(directory.glob("swssd.capture.jsonl*"), key=age, reverse=True)


def python_fold(directory: Path) -> State:
    """In file order (timestamps never go back here): SET merges fields, a subscriber's SET
    replaces the entry, DEL removes it; notifications and dead letters are not table state.

    The reference the Spark job is measured against, so it is kept lean: one json.loads per line
    (C), a dict per entry, no per-record objects. (Variants measured on 1M events - binary mode,
    dict.get instead of setdefault, a local `loads` - were all within noise of this one.)"""
    state: State = {}
    for path in capture_files_oldest_first(directory):
        with open(path, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                kind = r.get("kind")
                if kind == "notification" or r.get("dead_letter"):
                    continue
                k = (r["host"], r["db"], r["table"], r["key"])
                if r["op"] == "DEL":
                    state.pop(k, None)
                elif kind == "subscriber":
                    state[k] = dict(r["fvs"])
                else:
                    state.setdefault(k, {}).update(r["fvs"])
    return {k: v for k, v in state.items() if v}


def replay(argv: list[str]) -> float:
    """One replay command through cli.main in this process's session; its wall time."""
    from swssd.replay.cli import main

    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    elapsed = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"replay {argv[0]} failed with {code}")
    return elapsed


def spark_state(directory: Path, out: Path, spark_args: list[str]) -> float:
    return replay(["state", str(directory / "swssd.capture.jsonl*"), "--output", str(out), *spark_args])


def read_state(spark, out: Path) -> State:  # type: ignore[no-untyped-def]
    rows = spark.read.parquet(str(out / "state")).collect()
    return {(r["host"], r["db"], r["table"], r["key"]): dict(r["fields"]) for r in rows}


def round_order(sides: list[str], r: int) -> list[str]:
    """Round r's order: alternating and rotating, so that no side always runs first (or right
    after the same other) on a busy machine."""
    order = sides if r % 2 == 0 else sides[::-1]
    k = r // 2 % len(order)
    return order[k:] + order[:k]


def load() -> float:
    return os.getloadavg()[0]


def median(xs: list[float]) -> float:
    return statistics.median(xs)


TINY = [
    '{"ts":"2026-11-25T00:00:00.000000Z","host":"sw1","db":"APPL_DB","table":"PORT_TABLE",'
    '"key":"Ethernet0","op":"SET","fvs":[["mtu","9100"]],"seq":1}',
    '{"ts":"2026-11-25T00:00:00.000001Z","host":"sw1","db":"APPL_DB","table":"PORT_TABLE",'
    '"key":"Ethernet4","op":"SET","fvs":[["mtu","1500"]],"seq":2}',
]


#: how the command is started: as a module, and as the `swssd` console script beside this Python
#: (what a user types: it goes to the same entry without swssd.cli's imports)
LAUNCHERS = {
    "module": [sys.executable, "-m", "swssd.replay"],
    "console": [str(Path(sys.executable).with_name("swssd")), "replay"],
}


def _tiny_run(capture: Path, out: Path, env: dict[str, str], launcher: str = "module") -> float:
    t = time.perf_counter()
    proc = subprocess.run(
        [*LAUNCHERS[launcher], "state", str(capture.parent), "--output", str(out)],
        # not in the repository: `-m` puts the working directory first on sys.path
        capture_output=True, text=True, env=env, cwd=capture.parent,
    )
    elapsed = time.perf_counter() - t
    if proc.returncode != 0 or "2 entries in 1 tables" not in proc.stdout:
        raise SystemExit(f"replay state of the 2-event capture failed:\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def time_tiny_cli(base: Path, rounds: int, baseline: Path | None = None) -> None:
    """The 2-event capture through the command line in a fresh process: what a user waits for.

    Variants, interleaved round by round (the order alternating): `default` (the class archive in
    its own cache directory, made by one first run, which is reported apart with the time until
    the archive was kept: the command returns while its JVM writes it, and the rounds start
    after), `console` (the same through the `swssd` console script, when it is installed beside
    this Python), `no-archive` (SWSSD_REPLAY_CDS=0: only the small-input settings), and with
    --baseline DIR the swssd source tree in DIR (e.g. an earlier
    commit: `git archive <commit> swssd | tar -x -C DIR`) on PYTHONPATH, as it was."""
    capture = base / "tiny" / "sw1" / "swssd.capture.jsonl"
    capture.parent.mkdir(parents=True, exist_ok=True)
    capture.write_text("\n".join(TINY) + "\n")
    cache = base / "tiny-cache"
    shutil.rmtree(cache, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k != "SWSSD_REPLAY_CDS"}
    variants = {"default": ({**env, "XDG_CACHE_HOME": str(cache)}, "module")}
    if Path(LAUNCHERS["console"][0]).exists():
        variants["console"] = ({**env, "XDG_CACHE_HOME": str(cache)}, "console")
    variants["no-archive"] = ({**env, "XDG_CACHE_HOME": str(cache), "SWSSD_REPLAY_CDS": "0"}, "module")
    if baseline is not None:
        variants["baseline"] = ({**env, "PYTHONPATH": str(baseline)}, "module")
    before = load()
    t = time.perf_counter()
    first = _tiny_run(capture, base / "out-tiny", *variants["default"])
    # the archive is written after the command returned, by its JVM and a keeper (jvm.hand_off)
    while not list((cache / "swssd").glob("replay-cds-*.jsa.size")) or list((cache / "swssd").glob("*.tmp")):
        if time.perf_counter() - t > 600:
            raise SystemExit(f"no class archive kept in {cache}")
        time.sleep(0.5)
    print(f"2-event capture, first run (writes the class archive): {first:5.2f} s (load {before:.1f}); "
          f"archive kept {time.perf_counter() - t:.0f} s after its start")
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for r in range(rounds):
        for name in (list(variants) if r % 2 == 0 else list(reversed(variants))):
            before = load()
            elapsed = _tiny_run(capture, base / "out-tiny", *variants[name])
            runs[name].append((elapsed, before))
            print(f"2-event capture, CLI wall, {name:10s} {elapsed:5.2f} s (load {before:.1f})", flush=True)
    for name, got in runs.items():
        print(f"2-event capture, CLI wall, {name:10s}: median {median([x[0] for x in got]):.2f} s of {rounds} "
              f"(runs {', '.join(f'{x[0]:.1f}' for x in got)}; load {', '.join(f'{x[1]:.1f}' for x in got)})")


def time_report(spark, d: Path, n: int, out: Path, rounds: int) -> None:  # type: ignore[no-untyped-def]
    """`replay report` against `replay stats` over the same files, interleaved; medians and page size."""
    source = str(d / "swssd.capture.jsonl*")
    page = out / "report.html"
    argv = {"stats": ["stats", source, "--output", str(out / "stats")],
            "report": ["report", source, "--output", str(out / "report"), "--out", str(page),
                       "--around", iso(START_US + n // PER_TS * 500), "--window", "5ms"]}
    runs: dict[str, list[tuple[float, float]]] = {side: [] for side in argv}
    for r in range(rounds):
        for side in round_order(list(argv), r):
            # `stats` leaves its per-minute aggregation cached (a command is one process): the
            # next run of the same plan in this session would find it instead of reading the input
            spark.catalog.clearCache()
            before = load()
            elapsed = replay(argv[side])
            runs[side].append((elapsed, before))
            print(f"{n:>10,} events, round {r + 1}: {side:6s} {elapsed:6.1f} s ({n / elapsed:>9,.0f} ev/s)  "
                  f"load {before:.1f}", flush=True)
    medians = {side: median([x[0] for x in got]) for side, got in runs.items()}
    print(f"{n:>10,} events, medians of {rounds}: stats {medians['stats']:6.1f} s   report {medians['report']:6.1f} s"
          f"   report/stats {medians['report'] / medians['stats']:.2f}   page {page.stat().st_size:,} bytes",
          flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1_000_000, 4_000_000],
                    help="event counts (none: only the 2-event command timing)")
    ap.add_argument("--small", action="store_true", help="100k and 400k events, for a quick run")
    ap.add_argument("--mixed", action="store_true",
                    help="subscriber tables and notifications among the events")
    ap.add_argument("--segment", action="store_true",
                    help="also compact the captures once and time `replay state` over the segment")
    ap.add_argument("--report", action="store_true",
                    help="time `replay report` against `replay stats` (instead of state against Python)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved spark/python rounds per size")
    ap.add_argument("--cli-rounds", type=int, default=5,
                    help="timed runs of the command on a 2-event capture (0: skip)")
    ap.add_argument("--driver-memory", default="2g")
    ap.add_argument("--keep", type=Path, help="generate into (and keep) this directory")
    ap.add_argument("--baseline", type=Path, metavar="DIR",
                    help="also time the 2-event command with the swssd source tree in DIR (on PYTHONPATH)")
    args = ap.parse_args()
    sizes = [100_000, 400_000] if args.small else args.sizes

    base = args.keep or Path(tempfile.mkdtemp(prefix="bench_replay_"))
    base.mkdir(parents=True, exist_ok=True)
    if args.cli_rounds:
        try:
            time_tiny_cli(base, args.cli_rounds, args.baseline)
        finally:
            if not sizes and not args.keep:  # (the 2-event capture, its outputs and archive: 174 MB)
                shutil.rmtree(base, ignore_errors=True)
    if not sizes:
        return

    from swssd.replay.session import get_session

    t0 = time.perf_counter()
    spark = get_session(None, {}, args.driver_memory)
    startup = time.perf_counter() - t0
    cores = spark.sparkContext.defaultParallelism
    print(f"Spark {spark.version} {spark.sparkContext.master} ({cores} cores, driver memory "
          f"{args.driver_memory}), session start-up {startup:.1f} s; Python {sys.version.split()[0]}")

    warm = base / "warmup"
    if not (warm / "swssd.capture.jsonl").exists():
        generate(warm, 20_000, seed=99)
    spark_state(warm, base / "out-warmup", [])
    if args.report:
        time_report(spark, warm, 20_000, base / "out-warmup-report", 1)

    results = []
    try:
        for n in sizes:
            d = base / (f"events-{n}" + ("-mixed" if args.mixed else ""))
            if not (d / "swssd.capture.jsonl").exists():
                t = time.perf_counter()
                nbytes = generate(d, n, mixed=args.mixed)
                print(f"generated {n:,} events, {nbytes / 1e6:.0f} MB in "
                      f"{len(list(d.iterdir()))} files ({time.perf_counter() - t:.0f} s)")
            if args.report:
                time_report(spark, d, n, base / f"out-{n}-report", args.rounds)
                continue
            sides = ["spark", "python"]
            seg: Path | None = None
            if args.segment:
                seg = base / (f"segment-{n}" + ("-mixed" if args.mixed else ""))
                before = load()
                elapsed = replay(["compact", str(d / "swssd.capture.jsonl*"), "--out", str(seg)])
                print(f"{n:>10,} events, compacted once into a segment of "
                      f"{sum(f.stat().st_size for f in seg.rglob('*.parquet')) / 1e6:.0f} MB: {elapsed:6.1f} s "
                      f"({n / elapsed:>9,.0f} ev/s)  load {before:.1f}", flush=True)
                sides.insert(1, "segment")
            runs: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
            expected: State | None = None
            same = True
            for r in range(args.rounds):
                for side in round_order(sides, r):
                    before = load()
                    if side == "python":
                        t = time.perf_counter()
                        expected = python_fold(d)
                        elapsed = time.perf_counter() - t
                    else:
                        source = str(seg) if side == "segment" else str(d / "swssd.capture.jsonl*")
                        elapsed = replay(["state", source, "--output", str(base / f"out-{n}-{side}")])
                    runs[side].append((elapsed, before))
                    print(f"{n:>10,} events, round {r + 1}: {side:7s} {elapsed:6.1f} s "
                          f"({n / elapsed:>9,.0f} ev/s)  load {before:.1f}", flush=True)
                    if side != "python" and expected is not None:
                        same &= read_state(spark, base / f"out-{n}-{side}") == expected
            assert expected is not None
            for side in sides:
                if side != "python":
                    same &= read_state(spark, base / f"out-{n}-{side}") == expected
            medians = {side: median([x[0] for x in runs[side]]) for side in sides}
            s_med, p_med = medians["spark"], medians["python"]
            results.append((n, s_med, p_med, len(expected), same))
            loads = [x[1] for k in runs for x in runs[k]]
            print(f"{n:>10,} events, medians of {args.rounds}: spark {s_med:6.1f} s ({n / s_med:>9,.0f} ev/s)   "
                  f"python {p_med:6.1f} s ({n / p_med:>9,.0f} ev/s)   python/spark {p_med / s_med:.2f}   "
                  f"load {min(loads):.1f}-{max(loads):.1f}   {len(expected)} entries, same state: {same}",
                  flush=True)
            if "segment" in medians:
                g_med = medians["segment"]
                print(f"{n:>10,} events, medians of {args.rounds}: segment {g_med:6.1f} s ({n / g_med:>9,.0f} ev/s)   "
                      f"python/segment {p_med / g_med:.2f}   spark/segment {s_med / g_med:.2f}", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)

    if len(results) >= 2:
        (n1, s1, p1, *_), (n2, s2, p2, *_) = results[0], results[-1]
        print(f"time ratio {n2 // 1000}k/{n1 // 1000}k: spark {s2 / s1:.2f}, python {p2 / p1:.2f} "
              f"(x{n2 / n1:g} events; target for spark <= {4.5 * n2 / n1 / 4:g})")
    if not all(r[-1] for r in results):
        raise SystemExit("spark and python states differ")


if __name__ == "__main__":
    main()
