"""Packing a command into RESP: swssd.redis.wire.pack_command against hiredis.pack_command (issue 12).

    .venv/bin/python bench/bench_pack.py [--blocks 40]

For the EVALSHA of a ProducerStateTable single set (12 arguments) and of batched sets of 8, 16
and 128 keys (4 fields each: 87, 167 and 1,287 arguments), as set() and set_many() send them:
blocks of calls of each packer, interleaved block by block, so that both see the same machine. Prints the
median time per command of each packer and the median of the per-block ratios swssd/hiredis
(below 1: swssd packs faster). The bytes are checked to be the same first. No Redis involved.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import hiredis

from swssd.redis.wire import pack_command

SHA = "a" * 40


def single_set() -> tuple[str, ...]:
    keys = ["PORT_TABLE_CHANNEL@0", "PORT_TABLE_KEY_SET", "_PORT_TABLE:Ethernet0"]
    return ("EVALSHA", SHA, str(len(keys)), *keys, "G", "Ethernet0", "mtu", "9100", "admin_status", "up")


def batched_set(n: int) -> tuple[str, ...]:
    keys = ["PORT_TABLE_CHANNEL@0", "PORT_TABLE_KEY_SET", "_PORT_TABLE:", *(f"Ethernet{i}" for i in range(n))]
    args = ["G"]
    for i in range(n):
        args += ["4", "alias", f"etp{i}", "speed", "100000", "mtu", "9100", "admin_status", "up"]
    return ("EVALSHA", SHA, str(len(keys)), *keys, *args)


def per_call(fn: Callable[[tuple[str, ...]], bytes], command: tuple[str, ...], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn(command)
    return (time.perf_counter() - start) / calls


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", type=int, default=40, help="interleaved blocks per command (default 40)")
    args = p.parse_args()
    cases = {"single set": single_set(), **{f"batched set, {n} keys": batched_set(n) for n in (8, 16, 128)}}
    print(f"{'command':24} {'args':>6} {'hiredis us':>11} {'swssd us':>9} {'swssd/hiredis':>14}")
    for name, command in cases.items():
        assert pack_command(command) == hiredis.pack_command(command), name
        calls = max(20, 20_000 // len(command))
        theirs: list[float] = []
        ours: list[float] = []
        ratios: list[float] = []
        for block in range(args.blocks):
            order = [(hiredis.pack_command, theirs), (pack_command, ours)]
            for fn, into in order if block % 2 == 0 else reversed(order):
                into.append(per_call(fn, command, calls))  # type: ignore[arg-type]
            ratios.append(ours[-1] / theirs[-1])
        print(f"{name:24} {len(command):6} {statistics.median(theirs) * 1e6:11.2f} "
              f"{statistics.median(ours) * 1e6:9.2f} {statistics.median(ratios):14.2f}")


if __name__ == "__main__":
    main()
