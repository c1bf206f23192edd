"""What the check for over-long lines costs a replay (issue 25, item 7: swssd/replay/readable.py).

Every local input is now read once more, in Python, in a thread beside Spark, to find the lines
longer than --max-line-bytes (Spark's reader skips them silently), and Spark drops by length what
its reader still hands over. This benchmark generates a plain JSON Lines capture (`--mb`, default
200 MB) and, round by round (the order alternating), times:
  scan     - readable.scan of the file alone (the check's work for it, in this process);
  replay   - `python -m swssd.replay stats FILE` of this tree, in a fresh process as a user runs it
             (JVM start-up included, class archive as configured);
  baseline - the same command run from `--baseline DIR`, an swssd tree without the check (e.g.
             `git worktree add /tmp/base <commit>`), when given.
Medians, each run's figure and the 1-minute load average at each run are printed (the machine may
be shared), and the replay/baseline ratio of the medians.

Run: .venv/bin/python bench/bench_line_check.py [--mb 200] [--rounds 3] [--baseline DIR] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from swssd.replay.inputs_doc import DEFAULT_MAX_LINE_BYTES
from swssd.replay.readable import scan

START_US = 1_795_651_200_000_000  # 2026-11-25T00:00:00Z


def generate(path: Path, megabytes: int) -> None:
    """A capture of PORT_TABLE-like SETs, one timestamp per 8 records, about `megabytes` MB."""
    target = megabytes * 1_000_000
    written = 0
    with path.open("w") as f:
        i = 0
        while written < target:
            us = START_US + (i // 8)
            ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(us // 1_000_000)) + f".{us % 1_000_000:06d}Z"
            line = json.dumps({"ts": ts, "host": "sw1", "db": "APPL_DB", "table": f"T{i % 20}",
                               "key": f"Ethernet{i % 1000}", "op": "SET",
                               "fvs": [["mtu", str(1500 + i % 7)], ["admin_status", "up"]], "seq": i + 1}) + "\n"
            f.write(line)
            written += len(line)
            i += 1


def timed_scan(path: Path) -> float:
    start = time.perf_counter()
    found, problem = scan(str(path), DEFAULT_MAX_LINE_BYTES)
    elapsed = time.perf_counter() - start
    assert not found and problem is None
    return elapsed


def timed_replay(path: Path, out: Path, tree: Path | None) -> float:
    """One fresh `python -m swssd.replay stats` run; `tree`: import swssd from there."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "swssd.replay", "stats", str(path), "--output", str(out)],
                          capture_output=True, text=True, cwd=tree or out.parent)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"replay failed ({tree or 'this tree'}): {proc.stderr[-2000:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=200, help="size of the generated capture in MB (default 200)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", type=Path, metavar="DIR", help="an swssd tree without the check")
    ap.add_argument("--keep", type=Path, metavar="DIR", help="generate into (and keep) this directory")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-line-check-"))
    work.mkdir(parents=True, exist_ok=True)
    capture = work / "sw1" / "swssd.capture.jsonl"
    if not capture.exists():
        capture.parent.mkdir(parents=True, exist_ok=True)
        generate(capture, args.mb)
    size = capture.stat().st_size
    sides = ["scan", "replay"] + (["baseline"] if args.baseline else [])
    times: dict[str, list[float]] = {side: [] for side in sides}
    loads: list[float] = []
    try:
        for r in range(args.rounds):
            order = sides if r % 2 == 0 else sides[::-1]
            for side in order:
                loads.append(os.getloadavg()[0])
                if side == "scan":
                    times[side].append(timed_scan(capture))
                else:
                    tree = args.baseline.resolve() if side == "baseline" else None
                    times[side].append(timed_replay(capture, work / f"out-{side}", tree))
            print(f"round {r + 1}: " + ", ".join(f"{s} {times[s][-1]:.2f} s" for s in sides), flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\ncapture: {size / 1e6:.0f} MB plain JSON Lines; load average (1 min) during the runs: "
          f"{min(loads):.1f}-{max(loads):.1f}")
    for side in sides:
        med = statistics.median(times[side])
        extra = f" ({size / med / 1e9:.2f} GB/s)" if side == "scan" else ""
        print(f"{side:>8}: median {med:.2f} s{extra}; runs " + ", ".join(f"{t:.2f}" for t in times[side]))
    if args.baseline:
        print(f"replay/baseline: {statistics.median(times['replay']) / statistics.median(times['baseline']):.3f}")


if __name__ == "__main__":
    main()
