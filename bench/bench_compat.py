"""swssd's compatible layer (swssd.compat, as the opt-in `swsscommon` package) side by side with
sonic-swss-common's binding: the same driver, run once through each in its own process, rounds
interleaved, on one private redis-server (TCP loopback).

    .venv/bin/python bench/bench_compat.py --binding ~/.cache/swssd/swss-common/*/env.sh [--rounds 5]

Cases: ProducerStateTable.set one key at a time (the single set) and buffered on a RedisPipeline
of 128 (the batched set the binding offers Python), Table.set and Table.get, a
ConsumerStateTable drain of a pre-filled key set (pop batch 128), a SubscriberStateTable reading
the keyspace events of as many Table.set calls made before (select, then pops), and ConfigDBConnector
get_table / get_config / mod_config on 1,000 rows. Each figure is the median over the rounds, in
operations (keys, rows) per second; the ratio is layer / binding (above 1: the layer is faster).

The single set also runs in the C++ library itself (bench/cpp/tables_bench.cpp, mode pst_set,
built against the binding's tree as bench_cpp.py builds it), in the same rounds: the layer's
ratio to it is the issue's "single set >= 0.9x C++" (a C++ program pays neither Python nor SWIG).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from swssd.redis.embedded_redis import EmbeddedRedis  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from bench_cpp import build_cpp  # noqa: E402

DRIVER = r'''
import json, sys, time
from swsscommon import swsscommon as sc
config, n, case = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sc.SonicDBConfig.initialize(config)
db = sc.DBConnector("APPL_DB", 0, True)
db.flushdb()
fvs = sc.FieldValuePairs([("f1", "v1"), ("f2", "v2"), ("f3", "v3"), ("f4", "v4")])
reps = 10  # ConfigDB calls are short: several, so one scheduling hiccup does not make the figure

def single_set():
    ps = sc.ProducerStateTable(db, "BENCH")
    return n, lambda: [ps.set(f"k{i}", fvs) for i in range(n)]

def buffered_set():
    pipe = sc.RedisPipeline(db, 128)
    ps = sc.ProducerStateTable(pipe, "BENCH", True)
    def run():
        for i in range(n):
            ps.set(f"k{i}", fvs)
        ps.flush()
        return pipe  # the binding's table does not keep its pipeline alive: a freed one crashes it
    return n, run

def cst_drain():
    ps = sc.ProducerStateTable(db, "BENCH")
    for i in range(n):
        ps.set(f"k{i}", fvs)
    cs = sc.ConsumerStateTable(db, "BENCH", 128)
    def drain():
        while cs.pops()[0]:
            pass
    return n, drain

def table_set():
    t = sc.Table(db, "T")
    return n, lambda: [t.set(f"k{i}", fvs) for i in range(n)]

def table_get():
    t = sc.Table(db, "T")
    for i in range(n):
        t.set(f"k{i}", fvs)
    return n, lambda: [t.get(f"k{i}") for i in range(n)]

def sst():
    db.config_set("notify-keyspace-events", "AKE")
    table = sc.SubscriberStateTable(db, "S")
    writer = sc.Table(db, "S")
    for i in range(n):  # the events wait on the subscription's socket
        writer.set(f"k{i}", fvs)
    sel = sc.Select()
    sel.addSelectable(table)
    def drain():
        seen = 0
        while seen < n:
            state, _ = sel.select(2000)
            if state != sc.Select.OBJECT:
                raise SystemExit(f"SubscriberStateTable: select() gave {state} after {seen} of {n}")
            seen += len(table.pops()[0])
    return n, drain

def configdb(call):
    def setup():
        cdb = sc.ConfigDBConnector()
        cdb.connect(wait_for_init=False)
        cdb.get_redis_client("CONFIG_DB").flushdb()
        rows = {f"Ethernet{i}": {"alias": f"etp{i}", "mtu": "9100", "lanes": ["0", "1"]} for i in range(1000)}
        cdb.mod_config({"PORT": rows})
        return 1000 * reps, lambda: [call(cdb, rows) for _ in range(reps)]
    return setup

CASES = {
    "single set (PST.set)": single_set,
    "buffered set (RedisPipeline 128)": buffered_set,
    "CST drain, batch 128": cst_drain,
    "Table.set": table_set,
    "Table.get": table_get,
    "SubscriberStateTable select+pops": sst,
    "ConfigDB mod_config, 1,000 rows": configdb(lambda cdb, rows: cdb.mod_config({"PORT": rows})),
    "ConfigDB get_table, 1,000 rows": configdb(lambda cdb, rows: cdb.get_table("PORT")),
    "ConfigDB get_config, 1,000 rows": configdb(lambda cdb, rows: cdb.get_config()),
}
if case == "list":
    print(json.dumps(list(CASES)))
else:
    count, run = CASES[case]()
    start = time.perf_counter()
    run()
    print(json.dumps(count / (time.perf_counter() - start)))
'''


def run(env: dict[str, str], python: str, config: Path, n: int, case: str) -> Any:
    done = subprocess.run([python, "-c", DRIVER, str(config), str(n), case], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def binding_env(env_file: str) -> dict[str, str]:
    dump = subprocess.run(["bash", "-c", 'set -a; source "$1" >/dev/null && env -0', "bash", env_file],
                          capture_output=True, check=True)
    return dict(item.split("=", 1) for item in dump.stdout.decode().split("\0") if "=" in item)


#: the case that also runs in the C++ library itself
SINGLE_SET = "single set (PST.set)"


def cpp_single_set(binary: Path, config: Path, address: str, n: int) -> float:
    """Keys per second of the C++ library's ProducerStateTable.set, one call a key (its clock)."""
    proc = subprocess.Popen([str(binary), "pst_set", str(config), address, "BENCH", str(n)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        proc.kill()
        raise RuntimeError("tables_bench did not get ready")
    proc.stdin.write("go\n")
    proc.stdin.flush()
    out, _ = proc.communicate(timeout=600)
    result = json.loads(out.strip().splitlines()[-1])
    if proc.returncode != 0 or result["count"] != n:
        raise RuntimeError(f"tables_bench pst_set failed: {out!r}")
    return float(n / (result["ns"] / 1e9))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--binding", required=True, help="env file of a built sonic-swss-common binding")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keys", type=int, default=20000)
    parser.add_argument("--only", nargs="*", help="case names (default: all)")
    args = parser.parse_args()
    theirs_env = binding_env(args.binding)
    ours_env = dict(os.environ, PYTHONPATH=f"{ROOT / 'compat'}{os.pathsep}{ROOT}")
    results: dict[str, dict[str, list[float]]] = {"layer": {}, "binding": {}}
    cpp: list[float] = []
    tree = Path(theirs_env["SWSS_COMMON_DIR"])
    out_dir = Path(tempfile.mkdtemp(prefix="bench-compat-"))
    binary = build_cpp(tree, out_dir)
    with EmbeddedRedis() as server:
        config = server.write_database_config()
        sides = [("layer", ours_env, sys.executable), ("binding", theirs_env, theirs_env.get("PYTHON", "python3"))]
        cases = args.only or run(ours_env, sys.executable, config, 0, "list")
        for round_no in range(args.rounds):
            for case in cases:  # the two sides of a case back to back, so both see the same load
                for who, env, python in sides if round_no % 2 == 0 else reversed(sides):
                    results[who].setdefault(case, []).append(run(env, python, config, args.keys, case))
                if case == SINGLE_SET:
                    cpp.append(cpp_single_set(binary, config, f"127.0.0.1:{server.port}", args.keys))
    print(f"{'case':36} {'layer /s':>12} {'binding /s':>12} {'ratio':>7}")
    for case, ours in results["layer"].items():
        mine, theirs = statistics.median(ours), statistics.median(results["binding"][case])
        print(f"{case:36} {mine:12,.0f} {theirs:12,.0f} {mine / theirs:7.2f}")
    if cpp:
        mine = statistics.median(results["layer"][SINGLE_SET])
        print(f"{'single_set, the C++ library itself':36} {mine:12,.0f} {statistics.median(cpp):12,.0f} "
              f"{mine / statistics.median(cpp):7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
