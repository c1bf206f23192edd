"""`python -m campaign` (PYTHONPATH=tests): run seeds, print each run's figures and anomalies,
the totals, and for each failing seed the command that replays it. Exit 1 when any run failed."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

from .runner import Result, run_schedule
from .schedule import FAULT_KINDS, generate


def parse_seeds(text: str) -> list[int]:
    """`7`, `0-19` or `1,5,9`."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def parse_kinds(text: str) -> tuple[str, ...]:
    """Comma-separated fault kinds; `-redis_wipe,-notify_off` means all but those."""
    names = [k for k in text.split(",") if k]
    if names and all(k.startswith("-") for k in names):
        names = [k for k in FAULT_KINDS if f"-{k}" not in names]
    unknown = sorted(set(names) - set(FAULT_KINDS))
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown fault kinds {unknown}; known: {', '.join(FAULT_KINDS)}")
    return tuple(k for k in FAULT_KINDS if k in names)  # the canonical order: a seed's schedule depends on it


def summary(results: list[Result]) -> str:
    faults: Counter[str] = Counter()
    for r in results:
        faults.update(r.faults)
    failed = [r for r in results if r.anomalies]
    lines = [
        f"schedules run: {len(results)}, failed: {len(failed)}",
        f"faults injected: {sum(faults.values())} ({', '.join(f'{k} {v}' for k, v in sorted(faults.items()))})",
        f"changes written: {sum(r.changes_written for r in results)}, "
        f"handled changes checked: {sum(r.changes_checked for r in results)}, "
        f"blocking calls checked: {sum(r.blocking.get('calls', 0) for r in results)}",
        f"anomalies found: {sum(len(r.anomalies) for r in results)}",
    ]
    return "\n".join(lines)


def report(result: Result) -> str:
    head = (f"{result.schedule.describe()}\n  {result.changes_written} changes written, {result.changes_checked} "
            f"handled changes checked, blocking {result.blocking.get('calls', 0)} calls, {result.seconds:.1f} s")
    if not result.anomalies:
        return head + "\n  ok"
    lines = [head, *(f"  ANOMALY {a}" for a in result.anomalies), f"  replay: {result.replay_command()}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m campaign", description=__doc__)
    parser.add_argument("--seed", dest="seeds", type=parse_seeds, default=None, help="one seed, as --seeds")
    parser.add_argument("--seeds", type=parse_seeds, default=[0], help="7, 0-19 or 1,5,9")
    parser.add_argument("--seconds", type=float, default=5.0, help="how long the faults and the writes last")
    parser.add_argument("--settle", type=float, default=30.0, help="how long the quiet phase may wait")
    parser.add_argument("--kinds", type=parse_kinds, default=FAULT_KINDS,
                        help="the fault kinds to draw from, comma-separated (default: all)")
    parser.add_argument("--no-blocking", dest="blocking", action="store_false",
                        help="without the blocking layer's clients")
    parser.add_argument("--keep", type=Path, default=None, help="keep each run's logs and records here")
    args = parser.parse_args(argv)
    results = []
    for seed in args.seeds:
        with tempfile.TemporaryDirectory(prefix="swssd-campaign-") as tmp:
            where = (args.keep / f"seed{seed}") if args.keep else Path(tmp)
            schedule = generate(seed, args.seconds, kinds=args.kinds, blocking=args.blocking)
            result = run_schedule(schedule, where, args.settle)
        print(report(result), flush=True)
        results.append(result)
    print(summary(results))
    return 1 if any(r.anomalies for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
