"""`swssd replay` against what an engineer would write instead (issue 39), on a fleet's swss.rec.

Generates once (bench/fleet_rec.py; kept with --keep DIR) SONiC swss.rec recordings of 4 switches,
rotated and gzipped as logrotate leaves them, at each size (default 2M and 8M events). Then, per
size and round, runs each side as a user runs it, a fresh process each (JVM start-up included),
interleaved (the order alternates from round to round):

  swssd  - `swssd replay <command>` (stats, state, history, diff, report);
  plain  - the same answer from a plain hand-written PySpark job (bench/plain_spark_jobs.py: read
           the text, one regular expression, DataFrame functions, local[*]);

and, for reference, the single-pass tools one switch's engineer reaches for, on the same files:
  awk    - `zcat -f | awk` counting lines per host and table (no distinct keys, no first/last);
  python - one Python pass computing what plain `stats` computes (regex, dicts, sets).

`stats` is checked side by side: per host and table, the event count, distinct keys, first and
last instants of swssd's printed table must equal plain's and python's. Prints every run with the
1-minute load average before it, medians, the plain/swssd time ratio per command and size (above 1:
swssd is faster), and the per-event slope (seconds per million events between the two sizes).

`--baseline DIR` (an earlier swssd tree) adds its `replay stats` as a third side, `before`.
`--step-us N` spreads each host's lines N microseconds apart (default 250: 2M events span two
minutes, every key changes many times a minute; 50000: seven hours, nearly every event is its
key's only one in its minute, which is what stats' per-minute figures cost most on).

Run: .venv/bin/python bench/bench_replay_baselines.py [--sizes 2000000 8000000] [--rounds 3]
     [--commands stats state history diff report] [--other-rounds 1] [--keep DIR] [--baseline DIR]
     [--step-us N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fleet_rec import STEP_US, generate

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
HOSTS = 4
HISTORY_KEY = "Ethernet4"
LINE = re.compile(r"^(\d{4}-\d{2}-\d{2}\.\d{2}:\d{2}:\d{2}\.\d{6})\|([^:|]+)[:|](.*?)\|(SET|DEL)(?:\|.*)?$")

Answer = dict[tuple[str, str], tuple[int, int, str, str]]


def host_dirs(data: Path) -> list[str]:
    return [str(data / f"sw{h}") for h in range(1, HOSTS + 1)]


def swssd_argv(command: str, data: Path, out: Path, dump: Path) -> list[str]:
    base = [PYTHON, "-m", "swssd.replay", command]
    if command == "history":
        return [*base, str(data), "--key", HISTORY_KEY, "--output", str(out)]
    if command == "diff":
        return [*base, str(data / "sw1"), "--dump", str(dump), "--output", str(out)]
    if command == "report":
        return [*base, str(data), "--output", str(out), "--out", str(out / "report.html")]
    return [*base, str(data), "--output", str(out)]


def plain_argv(command: str, data: Path, out: Path, dump: Path) -> list[str]:
    base = [PYTHON, str(HERE / "plain_spark_jobs.py"), command, str(out / "plain")]
    if command == "history":
        return [*base, *host_dirs(data), "--key", HISTORY_KEY]
    if command == "diff":
        return [*base, str(data / "sw1"), "--dump", str(dump)]
    return [*base, *host_dirs(data)]


def awk_argv(data: Path) -> list[str]:
    script = ("for d in " + " ".join(host_dirs(data)) + "; do zcat -f $d/swss.rec* | "
              "awk -F'|' -v h=$(basename $d) '{t=$2; sub(/:.*/, \"\", t); n[t]++} "
              "END {for (t in n) print h, t, n[t]}'; done")
    return ["sh", "-c", script]


def timed(argv: list[str], stdout: Path, ok: tuple[int, ...] = (0,), tree: Path | None = None) -> float:
    """Wall time of `argv`; `tree`: an earlier swssd tree to run it from."""
    env = {**os.environ, "PYTHONPATH": str(tree)} if tree else None
    t = time.perf_counter()
    with open(stdout, "wb") as out:
        done = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, cwd=tree or HERE.parent, env=env)
    elapsed = time.perf_counter() - t
    if done.returncode not in ok:
        raise SystemExit(f"{argv[:4]} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return elapsed


def python_stats(data: Path) -> tuple[float, Answer]:
    """One pass over every file: counts, distinct keys, first and last per host and table."""
    import gzip

    t = time.perf_counter()
    found: dict[tuple[str, str], list] = {}  # type: ignore[type-arg]
    for directory in host_dirs(data):
        host = Path(directory).name
        for path in sorted(Path(directory).glob("swss.rec*")):
            opener = gzip.open if path.name.endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8") as f:
                for line in f:
                    m = LINE.match(line.rstrip("\n"))
                    if m is None:
                        continue
                    ts, table, key = m.group(1), m.group(2), m.group(3)
                    entry = found.get((host, table))
                    if entry is None:
                        found[(host, table)] = [1, {key}, ts, ts]
                    else:
                        entry[0] += 1
                        entry[1].add(key)
                        entry[2] = min(entry[2], ts)
                        entry[3] = max(entry[3], ts)
    elapsed = time.perf_counter() - t
    return elapsed, {k: (v[0], len(v[1]), _iso(v[2]), _iso(v[3])) for k, v in found.items()}


def _iso(rec: str) -> str:
    return rec.replace(".", "T", 1) + "Z"


def swssd_answer(printed: Path) -> Answer:
    """From the table `replay stats` prints: host db table kind events SET DEL notif dead keys
    ev/min peak/min first last."""
    got: Answer = {}
    for line in printed.read_text().splitlines():
        cols = line.split()
        if len(cols) == 14 and cols[0].startswith("sw") and cols[4].isdigit():
            got[(cols[0], cols[2])] = (int(cols[4]), int(cols[9]), cols[12], cols[13])
    return got


def plain_answer(printed: Path) -> Answer:
    got: Answer = {}
    for line in printed.read_text().splitlines():
        cols = line.split()
        if len(cols) == 6 and cols[0].startswith("sw"):
            got[(cols[0], cols[1])] = (int(cols[2]), int(cols[3]), cols[4], cols[5])
    return got


def write_dump(data: Path, dump: Path) -> None:
    """A `swssd dump`-style JSON of sw1's APPL_DB at the end, from a Python fold, with a few
    entries changed, one removed and one table left out (so that diff has something to find)."""
    import gzip

    state: dict[str, dict[str, str]] = {}
    paths = sorted((data / "sw1").glob("swss.rec*"), key=lambda p: -int(p.name.split(".")[2])
                   if p.name.count(".") >= 2 else 0)
    for path in paths:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            for line in f:
                parts = line.rstrip("\n").split("|")
                m = LINE.match(line.rstrip("\n"))
                if m is None or ":" not in parts[1]:  # APPL_DB (TABLE:key) lines only
                    continue
                name = f"{m.group(2)}:{m.group(3)}"
                if m.group(4) == "DEL":
                    state.pop(name, None)
                    continue
                fields = line.rstrip("\n").split(f"|{m.group(4)}|", 1)[1]
                entry = state.setdefault(name, {})
                for token in re.split(r"\|(?=[^|]*:)", fields):
                    field, _, value = token.partition(":")
                    entry[field] = value
    names = sorted(state)
    for name in names[:5]:
        state[name] = {"changed": "1"}
    state.pop(names[5], None)
    state = {k: v for k, v in state.items() if not k.startswith("INTF_TABLE:")}
    tables: dict[str, dict[str, dict[str, str]]] = {}
    for name, entry in state.items():
        table, key = name.split(":", 1)
        tables.setdefault(table, {})[key] = entry
    dump.write_text(json.dumps(tables))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[2_000_000, 8_000_000])
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of stats")
    ap.add_argument("--other-rounds", type=int, default=1, help="interleaved rounds of the other commands")
    ap.add_argument("--commands", nargs="+", default=["stats", "state", "history", "diff", "report"])
    ap.add_argument("--keep", type=Path, help="generate into (and keep, and reuse) this directory")
    ap.add_argument("--step-us", type=int, default=STEP_US,
                    help="microseconds between two lines of a host (default %(default)s: 2M events span 2 "
                         "minutes; 50000 spreads them over 7 hours, where nearly every event is its key's "
                         "only one in its minute)")
    ap.add_argument("--baseline", type=Path, metavar="DIR",
                    help="an earlier swssd tree: its `replay stats` runs as a third side, `before`")
    args = ap.parse_args()

    base = args.keep or Path(tempfile.mkdtemp(prefix="bench_replay_baselines_"))
    runs: dict[tuple[int, str, str], list[float]] = {}
    loads: list[float] = []
    try:
        for size in args.sizes:
            data = base / (f"rec-{size}" if args.step_us == STEP_US else f"rec-{size}-step-{args.step_us}")
            if not data.exists():
                t = time.perf_counter()
                generate(data, size, HOSTS, step_us=args.step_us)
                files = [p for p in data.rglob("*") if p.is_file()]
                print(f"generated {size:,} events on {HOSTS} hosts: {len(files)} files, "
                      f"{sum(p.stat().st_size for p in files) / 1e6:.0f} MB ({time.perf_counter() - t:.0f} s)",
                      flush=True)
            out = base / f"out-{data.name[4:]}"
            out.mkdir(exist_ok=True)
            dump = out / "sw1-dump.json"
            if "diff" in args.commands and not dump.exists():
                write_dump(data, dump)
            for command in args.commands:
                rounds = args.rounds if command == "stats" else args.other_rounds
                for r in range(rounds):
                    sides = ["swssd", "plain"] if r % 2 == 0 else ["plain", "swssd"]
                    if args.baseline and command == "stats":
                        sides.insert(r % 3, "before")
                    for side in sides:
                        argv = (plain_argv if side == "plain" else swssd_argv)(command, data, out / side, dump)
                        loads.append(os.getloadavg()[0])
                        printed = out / f"{side}-{command}.txt"
                        # `replay diff` exits 1 when it finds differences (the dump has some)
                        ok = (1,) if side == "swssd" and command == "diff" else (0,)
                        elapsed = timed(argv, printed, ok, args.baseline if side == "before" else None)
                        runs.setdefault((size, command, side), []).append(elapsed)
                        print(f"{size:>9,} {command:8s} round {r + 1}: {side:6s} {elapsed:6.1f} s  "
                              f"load {loads[-1]:.1f}", flush=True)
                    if command == "stats":
                        want = plain_answer(out / "plain-stats.txt")
                        got = swssd_answer(out / "swssd-stats.txt")
                        if not want or got != want:
                            raise SystemExit(f"stats answers differ: swssd {len(got)} rows, plain {len(want)} rows")
                if command == "stats":
                    loads.append(os.getloadavg()[0])
                    elapsed = timed(awk_argv(data), out / "awk.txt")
                    runs.setdefault((size, "stats", "awk"), []).append(elapsed)
                    elapsed, answer = python_stats(data)
                    runs.setdefault((size, "stats", "python"), []).append(elapsed)
                    if answer != plain_answer(out / "plain-stats.txt"):
                        raise SystemExit("the Python pass's stats differ from plain's")
        print(f"\nmedians (s), load {min(loads):.1f}-{max(loads):.1f}:")
        print(f"{'events':>9} {'command':8s} {'swssd':>7} {'plain':>7} {'plain/swssd':>11} {'awk':>6} {'python':>7}")
        for size in args.sizes:
            for command in args.commands:
                m = {side: statistics.median(runs[(size, command, side)])
                     for side in ("swssd", "plain", "awk", "python") if (size, command, side) in runs}
                extra = (f" {m['awk']:6.1f} {m['python']:7.1f}" if "awk" in m else "")
                if (size, command, "before") in runs:
                    before = statistics.median(runs[(size, command, "before")])
                    extra += f"   before {before:.1f} s (before/swssd {before / m['swssd']:.2f})"
                ratio = m["plain"] / m["swssd"]
                print(f"{size:>9,} {command:8s} {m['swssd']:7.1f} {m['plain']:7.1f} {ratio:11.2f}{extra}")
        if len(args.sizes) >= 2:
            small, big = min(args.sizes), max(args.sizes)
            millions = (big - small) / 1e6
            print("\nslope, seconds per million events between the two sizes:")
            for command in args.commands:
                slopes = {side: (statistics.median(runs[(big, command, side)])
                                 - statistics.median(runs[(small, command, side)])) / millions
                          for side in ("swssd", "plain")}
                print(f"  {command:8s} swssd {slopes['swssd']:.2f}  plain {slopes['plain']:.2f}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
