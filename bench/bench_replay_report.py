"""`swssd replay report` against `swssd replay stats` on one fleet capture (issue 28: "a 4M-event
capture makes a report in about the time `stats` takes, and the HTML stays under 5 MB").

Generates once, into a temporary directory (or --keep DIR, reused when it is there), a capture of
several hosts: the first hosts write swssd JSON Lines (rotated into ~64 MiB files, the oldest
gzipped; notifications, dead letters and subscriber tables among the records), the last one
writes swss.rec (rotated, the oldest gzipped, with 'recording started' markers); every host has
a few rejected lines (none with --no-rejects). Field values go back and forth (admin_status
up/down), so keys flap.

Then, in one warm SparkSession (local[*]), runs `replay stats` and `replay report` (with
`--around` an instant in the middle and `--window 5ms`) through swssd.replay.cli.main, alternating
which runs first from round to round, Spark's cache cleared before each run. Prints each run with
the 1-minute load average before it, the medians, their ratio and the page's size.

Run: .venv/bin/python bench/bench_replay_report.py [--events 4000000] [--hosts 4] [--rounds 3] [--no-rejects]
     [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_replay import replay  # bench/ is the script's directory: the same timed call
from fleet_rec import write_rotated

TABLES = 20
KEYS = 500
FIELDS = ["alias", "speed", "mtu", "admin_status"]
PER_TS = 8
FILE_BYTES = 64 * 1024 * 1024
START_US = 1_795_651_200_000_000  # 2026-11-26T00:00:00Z
STEP_US = 1_000  # between two batches of PER_TS records
REJECT_EVERY = 100_003


def iso(us: int) -> str:
    s, frac = divmod(us, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + f".{frac:06d}Z"


def rec_ts(us: int) -> str:
    return iso(us)[:26].replace("T", ".")


def _value(rng: random.Random, field: str, i: int) -> str:
    if field == "admin_status":
        return rng.choice(("up", "down"))
    if field == "mtu":
        return rng.choice(("1500", "9100"))
    return f"v{i}"


def _json_line(rng: random.Random, host: str, i: int, us: int) -> str:
    t = rng.randrange(TABLES)
    table, key = f"BENCH_{t:02d}_TABLE", f"Ethernet{rng.randrange(KEYS)}"
    kind = ',"kind":"subscriber"' if t >= TABLES - 3 else ""
    roll = rng.random()
    if roll < 0.04:
        table, key, kind = "BENCH_NOTIFICATIONS", "[]", ',"kind":"notification"'
        op, fvs = "port_state_change", f'[["oper_status","{rng.choice(("up", "down"))}"]]'
    elif roll < 0.14:
        op, fvs = "DEL", "[]"
    else:
        op = "SET"
        fvs = "[" + ",".join(f'["{f}","{_value(rng, f, i)}"]' for f in rng.sample(FIELDS, rng.randint(1, 4))) + "]"
    dead = ',"dead_letter":true,"reason":"handler failed"' if rng.random() < 0.01 else ""
    return (f'{{"ts":"{iso(us)}","host":"{host}","db":"APPL_DB","table":"{table}","key":"{key}",'
            f'"op":"{op}","fvs":{fvs},"seq":{i + 1}{kind}{dead}}}')


def _rec_line(rng: random.Random, i: int, us: int) -> str:
    table, key = f"BENCH_{rng.randrange(TABLES):02d}_TABLE", f"Ethernet{rng.randrange(KEYS)}"
    if rng.random() < 0.1:
        return f"{rec_ts(us)}|{table}:{key}|DEL"
    fields = rng.sample(FIELDS, rng.randint(1, 4))
    return f"{rec_ts(us)}|{table}:{key}|SET|" + "|".join(f"{f}:{_value(rng, f, i)}" for f in fields)


def generate(root: Path, events: int, hosts: int, rejects: bool = True, seed: int = 1) -> None:
    """`events` records over `hosts` hosts: sw1.. JSON Lines, the last host swss.rec."""
    rng = random.Random(seed)
    per_host = events // hosts
    for h in range(1, hosts + 1):
        host = f"sw{h}"
        rec = h == hosts
        lines = [f"{rec_ts(START_US)}|recording started"] if rec else []
        for i in range(per_host):
            us = START_US + (i // PER_TS) * STEP_US + h
            lines.append(_rec_line(rng, i, us) if rec else _json_line(rng, host, i, us))
            if rejects and i % REJECT_EVERY == 0:
                lines.append('{"ts": "2026-11-26T00:00:00Z", "broken' if not rec else "core dumped while writ")
        write_rotated(root / host, "swss.rec" if rec else "swssd.capture.jsonl", lines,
                      lambda age, files: age > 0 and age == files - 1, FILE_BYTES)  # the oldest gzipped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=4_000_000)
    ap.add_argument("--hosts", type=int, default=4, help="the last one writes swss.rec")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved stats/report rounds")
    ap.add_argument("--driver-memory", default="2g")
    ap.add_argument("--keep", type=Path, help="generate into (and keep, and reuse) this directory")
    ap.add_argument("--only", choices=["stats", "report"], help="time one side only (to profile it)")
    ap.add_argument("--no-rejects", action="store_true",
                    help="no rejected lines: `stats` then writes no rejects either (no second pass over the text)")
    args = ap.parse_args()

    base = args.keep or Path(tempfile.mkdtemp(prefix="bench_replay_report_"))
    captures = base / (f"fleet-{args.events}-{args.hosts}" + ("-clean" if args.no_rejects else ""))
    try:
        if not captures.exists():
            t = time.perf_counter()
            generate(captures, args.events, args.hosts, rejects=not args.no_rejects)
            files = [p for p in captures.rglob("*") if p.is_file()]
            print(f"generated {args.events:,} events on {args.hosts} hosts: {len(files)} files, "
                  f"{sum(p.stat().st_size for p in files) / 1e6:.0f} MB ({time.perf_counter() - t:.0f} s)", flush=True)
        from swssd.replay.session import get_session

        t = time.perf_counter()
        spark = get_session(None, {}, args.driver_memory)
        print(f"Spark {spark.version} {spark.sparkContext.master} ({spark.sparkContext.defaultParallelism} cores, "
              f"driver memory {args.driver_memory}), start-up {time.perf_counter() - t:.1f} s; "
              f"Python {sys.version.split()[0]}", flush=True)
        out = base / "out"
        page = out / "report.html"
        middle = START_US + args.events // args.hosts // PER_TS * STEP_US // 2
        argv = {"stats": ["stats", str(captures), "--output", str(out / "stats")],
                "report": ["report", str(captures), "--output", str(out / "report"), "--out", str(page),
                           "--around", iso(middle), "--window", "5ms"]}
        sides = [args.only] if args.only else list(argv)
        runs: dict[str, list[float]] = {side: [] for side in sides}
        loads: list[float] = []
        for r in range(args.rounds):
            for side in sides if r % 2 == 0 else sides[::-1]:
                spark.catalog.clearCache()  # a command is one process: nothing cached from the one before
                before = os.getloadavg()[0]
                loads.append(before)
                elapsed = replay(argv[side])
                runs[side].append(elapsed)
                print(f"round {r + 1}: {side:6s} {elapsed:6.1f} s  load {before:.1f}", flush=True)
        medians = {side: statistics.median(got) for side, got in runs.items()}
        text = "   ".join(f"{side} {m:6.1f} s" for side, m in medians.items())
        if len(medians) == 2:
            text += f"   report/stats {medians['report'] / medians['stats']:.2f}"
        if page.exists():
            text += f"   page {page.stat().st_size:,} bytes"
        print(f"{args.events:,} events, {args.hosts} hosts{', no rejects' if args.no_rejects else ''}, "
              f"medians of {args.rounds}: {text}   "
              f"load {min(loads):.1f}-{max(loads):.1f}", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
