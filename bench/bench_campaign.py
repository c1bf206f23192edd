"""The long fault campaign (issue 34): hundreds of seeded schedules, one command.

    .venv/bin/python bench/bench_campaign.py [--seeds 0-299] [--seconds 5] [--jobs 2] [--settle 30] [--minutes M]
        [--kinds ...] [--no-blocking] [--keep DIR]

Each seed is one run of tests/campaign (this file adds tests/ to sys.path): a private redis-server,
the fault proxy, `swssd run` with the campaign's mirror plugin on a state, queue, subscriber,
notification and zmq table, the producers and the blocking layer's clients, 2-4 faults of the
seed's schedule, a quiet phase, the checker. Prints a line per seed, then: schedules run, faults
injected (per kind), changes written and handled changes checked, blocking calls checked, anomalies
found (grouped by what they are, with the seeds showing each) and the command replaying each
failing seed. --jobs runs that many seeds at once (each its own Redis and daemon); --minutes
starts no seed after that long (the summary covers the seeds run).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing import get_context
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))

from campaign import FAULT_KINDS, Result, generate, run_schedule  # noqa: E402
from campaign.__main__ import parse_kinds, parse_seeds, report, summary  # noqa: E402


def one(seed: int, seconds: float, kinds: tuple[str, ...], blocking: bool, settle: float, keep: str | None) -> Result:
    with tempfile.TemporaryDirectory(prefix="swssd-campaign-") as tmp:
        where = Path(keep) / f"seed{seed}" if keep else Path(tmp)
        return run_schedule(generate(seed, seconds, kinds=kinds, blocking=blocking), where, settle)


def what(anomaly: str) -> str:
    """An anomaly without its figures and example: what kind of thing went wrong."""
    text = anomaly.split(", e.g.")[0]
    text = re.sub(r"daemon \d+:", "daemon:", text)
    text = re.sub(r"\(\w+, \d+ tasks\)", "", text)
    return re.sub(r"\d+", "N", text).strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=parse_seeds, default=parse_seeds("0-299"))
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--kinds", type=parse_kinds, default=FAULT_KINDS,
                        help="fault kinds to draw from (comma-separated; -a,-b: all but those)")
    parser.add_argument("--settle", type=float, default=30.0, help="longest quiet phase of a run (s)")
    parser.add_argument("--minutes", type=float, default=float("inf"), help="start no seed after this")
    parser.add_argument("--no-blocking", dest="blocking", action="store_false")
    parser.add_argument("--keep", default=None, help="keep each run's logs and records under this directory")
    args = parser.parse_args()
    began = time.monotonic()
    results: list[Result] = []
    todo = list(args.seeds)
    with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
        running: dict[Future[Result], int] = {}
        while todo or running:
            while todo and len(running) < args.jobs and time.monotonic() - began < args.minutes * 60:
                seed = todo.pop(0)
                running[pool.submit(one, seed, args.seconds, args.kinds, args.blocking, args.settle, args.keep)] = seed
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                del running[future]
                result = future.result()
                print(report(result), flush=True)
                results.append(result)
    if todo:
        print(f"time budget of {args.minutes:g} min spent: {len(todo)} seeds not run (from {todo[0]})")
    print(f"\n{summary(results)}\nwall time: {time.monotonic() - began:.0f} s")
    seeds: dict[str, list[int]] = defaultdict(list)
    for r in results:
        for kind in dict.fromkeys(what(a) for a in r.anomalies):
            seeds[kind].append(r.schedule.seed)
    counts = Counter({k: len(v) for k, v in seeds.items()})
    for kind, n in counts.most_common():
        print(f"  {n:4d} runs: {kind}  (seeds {', '.join(map(str, seeds[kind][:10]))}{' ...' if n > 10 else ''})")
    failed = [r for r in results if r.anomalies]
    if failed:
        print("replay a failing seed: " + failed[0].replay_command() + "   (from the repository's top)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
