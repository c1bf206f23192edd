"""CPU time of one blocking call of the compatible layer's connection (a GET, an EVALSHA of a
script with three keys), this tree against another revision's connection.py and wire.py (issue 34:
what marking a call in flight, so a call cut short leaves its connection unusable, costs).

    .venv/bin/python bench/bench_compat_call_cpu.py [--against 14279e8] [--calls 20000] [--rounds 7]

Both connections talk to one private redis-server over its unix socket, in one process, rounds
alternating which goes first; process CPU time per call (not wall time: the machine is shared),
medians of the rounds.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from swssd.compat import connection as this_tree
from swssd.lua import Script
from swssd.redis.embedded_redis import EmbeddedRedis

_SOURCE = b"return 1"
SCRIPT = Script("one", _SOURCE, hashlib.sha1(_SOURCE).hexdigest())
ROOT = Path(__file__).resolve().parents[1]


def load_revision(rev: str, where: Path) -> ModuleType:
    """`rev`'s swssd/compat/connection.py, packing with `rev`'s swssd/redis/wire.py."""
    modules: dict[str, ModuleType] = {}
    for name, path in (("wire_then", "swssd/redis/wire.py"), ("connection_then", "swssd/compat/connection.py")):
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"],
                              check=True, capture_output=True, text=True).stdout
        text = text.replace("from ..lua import Script", "from swssd.lua import Script")
        text = text.replace("from ..redis.wire import pack_command", "from wire_then import pack_command")
        (where / f"{name}.py").write_text(text)
        spec = importlib.util.spec_from_file_location(name, where / f"{name}.py")
        assert spec is not None and spec.loader is not None
        modules[name] = sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(modules[name])
    return modules["connection_then"]


def cpu_per_call(conn: Any, kind: str, calls: int) -> float:
    start = time.process_time()
    if kind == "GET":
        for _ in range(calls):
            conn.command("GET", "k")
    else:
        for i in range(calls):
            conn.evalsha(SCRIPT, ["T_CHANNEL@0", "T_KEY_SET", f"_T:k{i % 100}"], ["G", "f", "v"])
    return (time.process_time() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default="14279e8")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis() as server:
        then = load_revision(opts.against, Path(tmp))
        sides = {opts.against: then.RedisConnection.unix(server.unix_socket, 0),
                 "this tree": this_tree.RedisConnection.unix(server.unix_socket, 0)}
        for conn in sides.values():
            conn.command("SET", "k", "v")
            conn.load_scripts(SCRIPT)
        figures: dict[tuple[str, str], list[float]] = {}
        for r in range(opts.rounds):
            order = list(sides.items()) if r % 2 else list(reversed(sides.items()))
            for name, conn in order:
                for kind in ("GET", "EVALSHA"):
                    figures.setdefault((name, kind), []).append(cpu_per_call(conn, kind, opts.calls))
        for (name, kind), values in figures.items():
            print(f"{name:>12} {kind:8} median {statistics.median(values):6.2f} us CPU a call "
                  f"(min {min(values):.2f}, {opts.rounds} rounds of {opts.calls})")


if __name__ == "__main__":
    main()
