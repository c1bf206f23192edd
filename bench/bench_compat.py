"""swssd's compatible layer (swssd.compat, as the opt-in `swsscommon` package) side by side with
sonic-swss-common's binding: the same driver, run once through each in its own process, rounds
interleaved, on one private redis-server (TCP loopback).

    .venv/bin/python bench/bench_compat.py --binding ~/.cache/swssd/swss-common/*/env.sh [--rounds 5]

Cases: ProducerStateTable.set one key at a time (the single set), Table.set and Table.get, a
ConsumerStateTable drain of a pre-filled key set (pop batch 128), and ConfigDBConnector
get_table / get_config / mod_config on 1,000 rows. Each figure is the median over the rounds, in
operations (keys, rows) per second; the ratio is layer / binding (above 1: the layer is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from swssd.redis.embedded_redis import EmbeddedRedis  # noqa: E402

DRIVER = r'''
import json, sys, time
from swsscommon import swsscommon as sc
config, n = sys.argv[1], int(sys.argv[2])
sc.SonicDBConfig.initialize(config)
db = sc.DBConnector("APPL_DB", 0, True)
db.flushdb()
fvs = sc.FieldValuePairs([("f1", "v1"), ("f2", "v2"), ("f3", "v3"), ("f4", "v4")])
out = {}

def timed(name, count, fn):
    start = time.perf_counter()
    fn()
    out[name] = count / (time.perf_counter() - start)

ps = sc.ProducerStateTable(db, "BENCH")
def single_set():
    for i in range(n):
        ps.set(f"k{i}", fvs)
timed("single set (PST.set)", n, single_set)

cs = sc.ConsumerStateTable(db, "BENCH", 128)
def drain():
    while True:
        keys = cs.pops()[0]
        if not keys:
            break
timed("CST drain, batch 128", n, drain)

t = sc.Table(db, "T")
def table_set():
    for i in range(n):
        t.set(f"k{i}", fvs)
timed("Table.set", n, table_set)
def table_get():
    for i in range(n):
        t.get(f"k{i}")
timed("Table.get", n, table_get)

cdb = sc.ConfigDBConnector()
cdb.connect(wait_for_init=False)
cdb.get_redis_client("CONFIG_DB").flushdb()
rows = {f"Ethernet{i}": {"alias": f"etp{i}", "mtu": "9100", "lanes": ["0", "1"]} for i in range(1000)}
timed("ConfigDB mod_config, 1,000 rows", 1000, lambda: cdb.mod_config({"PORT": rows}))
timed("ConfigDB get_table, 1,000 rows", 1000, lambda: cdb.get_table("PORT"))
timed("ConfigDB get_config, 1,000 rows", 1000, lambda: cdb.get_config())
print(json.dumps(out))
'''


def run(env: dict[str, str], python: str, config: Path, n: int) -> dict[str, float]:
    done = subprocess.run([python, "-c", DRIVER, str(config), str(n)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def binding_env(env_file: str) -> dict[str, str]:
    dump = subprocess.run(["bash", "-c", 'set -a; source "$1" >/dev/null && env -0', "bash", env_file],
                          capture_output=True, check=True)
    return dict(item.split("=", 1) for item in dump.stdout.decode().split("\0") if "=" in item)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--binding", required=True, help="env file of a built sonic-swss-common binding")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keys", type=int, default=20000)
    args = parser.parse_args()
    theirs_env = binding_env(args.binding)
    ours_env = dict(os.environ, PYTHONPATH=f"{ROOT / 'compat'}{os.pathsep}{ROOT}")
    results: dict[str, dict[str, list[float]]] = {"layer": {}, "binding": {}}
    with EmbeddedRedis() as server:
        config = server.write_database_config()
        for round_no in range(args.rounds):
            order = [("layer", ours_env, sys.executable), ("binding", theirs_env, theirs_env.get("PYTHON", "python3"))]
            for who, env, python in order if round_no % 2 == 0 else reversed(order):
                for case, rate in run(env, python, config, args.keys).items():
                    results[who].setdefault(case, []).append(rate)
    print(f"{'case':36} {'layer /s':>12} {'binding /s':>12} {'ratio':>7}")
    for case, ours in results["layer"].items():
        mine, theirs = statistics.median(ours), statistics.median(results["binding"][case])
        print(f"{case:36} {mine:12,.0f} {theirs:12,.0f} {mine / theirs:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
