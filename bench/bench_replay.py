"""Replay benchmark (issue 5): `swssd replay state` in Spark local mode against a plain-Python fold.

Generates swssd JSON Lines captures of 1M and 4M events (20 tables x 1,000 keys, SET of 1 to 4
of 4 fields or DEL, 8 events per timestamp as in one pop batch, rotated into ~64 MiB files like
the capture writer's), then for each size:
  spark  - `replay state` through swssd.replay.cli.main in one warm SparkSession (local[*]);
           the session start-up (JVM) is measured once, apart;
  python - a single-process fold of the same files (json.loads each line, oldest file first),
           the obvious script an engineer would write;
and checks that both give the same state. The 4M/1M time ratio shows how the job scales
(target <= 4.5: linear). `--mixed` records the last 5 tables as subscriber tables (a SET is the
full entry, so it replaces) and makes 1 event in 20 a notification (never table state), to time
and check those kinds too.

Run: .venv/bin/python bench/bench_replay.py [--small] [--mixed] [--sizes 1000000 4000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
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
    replaces the entry, DEL removes it; notifications and dead letters are not table state."""
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


def spark_state(directory: Path, out: Path, spark_args: list[str]) -> float:
    from swssd.replay.cli import main

    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["state", str(directory / "swssd.capture.jsonl*"), "--output", str(out), *spark_args])
    elapsed = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"replay state failed with {code}")
    return elapsed


def read_state(spark, out: Path) -> State:  # type: ignore[no-untyped-def]
    rows = spark.read.parquet(str(out / "state")).collect()
    return {(r["host"], r["db"], r["table"], r["key"]): dict(r["fields"]) for r in rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 4_000_000])
    ap.add_argument("--small", action="store_true", help="100k and 400k events, for a quick run")
    ap.add_argument("--mixed", action="store_true",
                    help="subscriber tables and notifications among the events")
    ap.add_argument("--driver-memory", default="2g")
    ap.add_argument("--keep", type=Path, help="generate into (and keep) this directory")
    args = ap.parse_args()
    sizes = [100_000, 400_000] if args.small else args.sizes

    from swssd.replay.session import get_session

    base = args.keep or Path(tempfile.mkdtemp(prefix="bench_replay_"))
    t0 = time.perf_counter()
    spark = get_session(None, {}, args.driver_memory)
    startup = time.perf_counter() - t0
    cores = spark.sparkContext.defaultParallelism
    print(f"Spark {spark.version} {spark.sparkContext.master} ({cores} cores, driver memory "
          f"{args.driver_memory}), session start-up {startup:.1f} s; Python {os.sys.version.split()[0]}")

    warm = base / "warmup"
    generate(warm, 20_000, seed=99)
    spark_state(warm, base / "out-warmup", [])

    results = []
    try:
        for n in sizes:
            d = base / (f"events-{n}" + ("-mixed" if args.mixed else ""))
            if not (d / "swssd.capture.jsonl").exists():
                t = time.perf_counter()
                nbytes = generate(d, n, mixed=args.mixed)
                print(f"generated {n:,} events, {nbytes / 1e6:.0f} MB in "
                      f"{len(list(d.iterdir()))} files ({time.perf_counter() - t:.0f} s)")
            spark_s = spark_state(d, base / f"out-{n}", [])
            t = time.perf_counter()
            expected = python_fold(d)
            python_s = time.perf_counter() - t
            same = read_state(spark, base / f"out-{n}") == expected
            results.append((n, spark_s, python_s, len(expected), same))
            print(f"{n:>10,} events: spark {spark_s:6.1f} s ({n / spark_s:>9,.0f} ev/s)   "
                  f"python {python_s:6.1f} s ({n / python_s:>9,.0f} ev/s)   "
                  f"{len(expected)} entries, same state: {same}")
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
