"""Several producer and consumer processes on one redis-server: nothing lost, nothing invented.

Each worker is this file run as a script (`python test_multiprocess.py <role> <json>`), so the
processes share no Python state with the test; consumers write what they popped to a JSON file.

State table: 4 producers (single sets, set_many/delete_many, buffered, a mix) write 10,000 keys,
each key a short history of sets and at most one delete; 3 consumers (two with the C++ pops, one
with track_deletes) pop concurrently through Select. Every value names its key, field and the
position of its write in the key's history, so the consumed changes of a key can be put in order
across consumers: a SET by the newest write it carries, a DEL by the key's one delete.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

STATE_TABLE = "ROUTE_TABLE"
QUEUE_TABLE = "ASIC_STATE"
FIELDS = ("nexthop", "ifname", "weight", "vrf")
STATE_PRODUCERS = ("single", "many", "buffered", "mixed")
KEYS_PER_PRODUCER = 2500
QUEUE_PRODUCERS = ("single", "buffered", "single")
OPS_PER_QUEUE_PRODUCER = 1500

Op = tuple[str, str, dict[str, str]]  # ("set" | "del", key, fields)


# -- the workload, computed identically by producers and the test --------------------------


def value(key: str, field: str, seq: int) -> str:
    return f"{key}/{field}/{seq}"


def seq_of(val: str) -> int:
    return int(val.rsplit("/", 1)[1])


def key_history(rng: random.Random, key: str) -> list[Op]:
    """A few sets with at most one delete; a set after the delete rewrites every field set before it,
    so the C++ pops (which hides a delete followed by a set) still leaves the right consumed view."""
    kind = rng.choices(("plain", "reset", "gone", "ghost"), weights=(60, 20, 15, 5))[0]
    ops: list[Op] = []

    def set_some(required: frozenset[str] = frozenset()) -> None:
        chosen = set(rng.sample(FIELDS, rng.randint(1, 3))) | required
        ops.append(("set", key, {f: value(key, f, len(ops)) for f in sorted(chosen)}))

    if kind == "ghost":
        return [("del", key, {})]
    for _ in range(rng.randint(1, 3)):
        set_some()
    if kind in ("reset", "gone"):
        before = frozenset(f for op in ops for f in op[2])
        ops.append(("del", key, {}))
        if kind == "reset":
            set_some(before)
            if rng.random() < 0.5:
                set_some()
    return ops


def state_plan(producer: int) -> list[list[Op]]:
    """The producer's ops in rounds: round r holds the r-th op of every key, so a key's writes are
    spread over the run and consumers pop between them."""
    rng = random.Random(1000 + producer)
    histories = [key_history(rng, f"p{producer}:k{i}") for i in range(KEYS_PER_PRODUCER)]
    rounds: list[list[Op]] = []
    for r in range(max(len(h) for h in histories)):
        ops = [h[r] for h in histories if r < len(h)]
        rng.shuffle(ops)
        rounds.append(ops)
    return rounds


def final_state(plans: list[list[list[Op]]]) -> dict[str, dict[str, str]]:
    """What the table must hold at the end: sets merge fields, a delete drops the entry."""
    table: dict[str, dict[str, str]] = {}
    for plan in plans:
        for ops in plan:
            for kind, key, fields in ops:
                if kind == "set":
                    table.setdefault(key, {}).update(fields)
                else:
                    table.pop(key, None)
    return table


def queue_plan(producer: int) -> list[Op]:
    """ProducerTable ops: sets carry their position, every fifth op deletes a recently set key."""
    ops: list[Op] = []
    for i in range(OPS_PER_QUEUE_PRODUCER):
        key = f"p{producer}:oid:{i % 40}"
        if i % 5 == 4:
            ops.append(("del", key, {}))
        else:
            ops.append(("set", key, {"seq": str(i), "pid": str(producer)}))
    return ops


# -- worker processes -----------------------------------------------------------------------


async def run_state_producer(url: str, producer: int) -> None:
    from swssd import DBConnector, ProducerStateTable

    mode = STATE_PRODUCERS[producer]
    rng = random.Random(producer)
    async with await DBConnector.from_url(url, db_id=0) as db:
        plain = ProducerStateTable(db, STATE_TABLE)
        buffered = ProducerStateTable(db, STATE_TABLE, buffered=True)
        for ops in state_plan(producer):
            for start in range(0, len(ops), 50):
                chunk = ops[start : start + 50]
                how = rng.choice(("single", "many", "buffered")) if mode == "mixed" else mode
                if how == "many":
                    await plain.set_many([(k, f) for kind, k, f in chunk if kind == "set"])
                    await plain.delete_many([k for kind, k, _ in chunk if kind == "del"])
                    continue
                table = buffered if how == "buffered" else plain
                for kind, key, fields in chunk:
                    if kind == "set":
                        await table.set(key, list(fields.items()))
                    else:
                        await table.delete(key)
                if how == "buffered" and (start // 50) % 3 == 2:
                    await buffered.flush()
            await buffered.flush()


async def run_queue_producer(url: str, producer: int) -> None:
    from swssd import DBConnector, ProducerTable

    async with await DBConnector.from_url(url, db_id=0) as db:
        pt = ProducerTable(db, QUEUE_TABLE, buffered=QUEUE_PRODUCERS[producer] == "buffered")
        for i, (kind, key, fields) in enumerate(queue_plan(producer)):
            if kind == "set":
                await pt.set(key, list(fields.items()))
            else:
                await pt.delete(key)
            if pt.buffered and i % 100 == 99:
                await pt.flush()
        await pt.flush()


async def run_consumer(url: str, kind: str, out: str, stop: str, track_deletes: bool) -> None:
    """Select + pops until the stop file exists and nothing arrives for a moment."""
    from swssd import ConsumerStateTable, ConsumerTable, DBConnector, Select

    batches: list[list[list[Any]]] = []
    async with await DBConnector.from_url(url, db_id=0) as db:
        if kind == "state":
            table: Any = ConsumerStateTable(db, STATE_TABLE, pop_batch_size=64, track_deletes=track_deletes)
        else:
            table = ConsumerTable(db, QUEUE_TABLE, pop_batch_size=50)
        async with Select() as sel:
            await sel.add(table)
            Path(out + ".ready").touch()
            while True:
                ready = await sel.select(timeout=0.2)
                if ready is None:
                    if Path(stop).exists():
                        break
                    continue
                items = await ready.pops()
                if items:
                    batches.append([[e.key, e.op, [list(fv) for fv in e.fvs]] for e in items])
    Path(out).write_text(json.dumps(batches))


def worker_main(role: str, args: dict[str, Any]) -> None:
    if role == "state-producer":
        coro = run_state_producer(args["url"], args["producer"])
    elif role == "queue-producer":
        coro = run_queue_producer(args["url"], args["producer"])
    else:
        coro = run_consumer(
            args["url"], args["kind"], args["out"], args["stop"], args.get("track_deletes", False)
        )
    asyncio.run(coro)


# -- test-side orchestration ------------------------------------------------------------------


def spawn(role: str, **args: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, __file__, role, json.dumps(args)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL
    )


def finish(procs: list[subprocess.Popen[bytes]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    try:
        for p in procs:
            _, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            assert p.returncode == 0, f"worker {p.args[2]} failed:\n{err.decode(errors='replace')}"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def wait_for(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def run_workers(
    redis_server: Any,
    tmp_path: Path,
    kind: str,
    producers: list[dict[str, Any]],
    consumers: list[dict[str, Any]],
    backlog: Any,
) -> list[list[list[list[Any]]]]:
    """Start the consumers, then the producers; stop the consumers once all is produced and popped."""
    stop = tmp_path / "stop"
    outs = [tmp_path / f"consumer{i}.json" for i in range(len(consumers))]
    cons = [
        spawn("consumer", url=redis_server.url, kind=kind, out=str(out), stop=str(stop), **extra)
        for out, extra in zip(outs, consumers)
    ]
    try:
        wait_for(lambda: all(Path(str(o) + ".ready").exists() for o in outs), 60, "consumers to subscribe")
        finish([spawn(f"{kind}-producer", url=redis_server.url, **p) for p in producers], 120)
        wait_for(lambda: backlog() == 0, 60, "consumers to drain")
        stop.touch()
        finish(cons, 60)
    finally:
        for p in cons:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [json.loads(o.read_text()) for o in outs]


def redis_call(redis_server: Any, *args: str) -> Any:
    import redis

    with redis.Redis(unix_socket_path=redis_server.unix_socket, decode_responses=True) as r:
        return r.execute_command(*args)


def table_dump(redis_server: Any, name: str) -> dict[str, dict[str, str]]:
    import redis

    with redis.Redis(unix_socket_path=redis_server.unix_socket, decode_responses=True) as r:
        return {k[len(name) + 1 :]: r.hgetall(k) for k in r.keys(f"{name}:*")}


# -- the tests --------------------------------------------------------------------------------


def test_state_table_many_producers_many_consumers(clean_redis: Any, tmp_path: Path) -> None:
    plans = [state_plan(p) for p in range(len(STATE_PRODUCERS))]
    produced = {  # every (key, field, value) some producer wrote, and the keys it deleted
        (k, f, v) for plan in plans for ops in plan for kind, k, fields in ops for f, v in fields.items()
    }
    histories: dict[str, list[Op]] = {}
    for plan in plans:
        for ops in plan:
            for op in ops:
                histories.setdefault(op[1], []).append(op)
    # The one delete of a key, by its position in the key's history.
    deleted = {k: i for k, h in histories.items() for i, op in enumerate(h) if op[0] == "del"}
    assert len(histories) == 10_000
    expected = final_state(plans)

    results = run_workers(
        clean_redis, tmp_path, "state",
        producers=[{"producer": p} for p in range(len(STATE_PRODUCERS))],
        consumers=[{"track_deletes": False}, {"track_deletes": True}, {"track_deletes": False}],
        backlog=lambda: int(redis_call(clean_redis, "SCARD", f"{STATE_TABLE}_KEY_SET")),
    )
    assert all(results), "every consumer should have popped something"

    # Place each change in its key's history; nothing may be invented.
    timeline: dict[str, list[tuple[int, str, dict[str, str]]]] = {}
    for batches in results:
        last_pos: dict[str, int] = {}
        for batch in batches:
            for key, op, fvs in batch:
                fields = dict(map(tuple, fvs))
                assert len(fields) == len(fvs), f"duplicate field in {key}: {fvs}"
                if op == "SET":
                    assert fields, f"SET without fields for {key}"
                    for f, v in fields.items():
                        assert (key, f, v) in produced, f"invented: {key} {f}={v}"
                    pos = max(seq_of(v) for v in fields.values())
                else:
                    assert op == "DEL" and not fields and key in deleted, f"invented: {key} {op} {fvs}"
                    pos = deleted[key]
                # One consumer sees a key's changes in history order.
                assert pos > last_pos.get(key, -1), f"{key} out of order in one consumer"
                last_pos[key] = pos
                timeline.setdefault(key, []).append((pos, op, fields))

    assert set(timeline) == set(histories), f"never consumed: {sorted(set(histories) - set(timeline))[:5]}"
    consumed: dict[str, dict[str, str]] = {}
    for key, changes in timeline.items():
        positions = [p for p, _, _ in changes]
        assert len(positions) == len(set(positions)), f"{key} delivered twice: {changes}"
        for _, op, fields in sorted(changes, key=lambda c: c[0]):
            if op == "SET":
                consumed.setdefault(key, {}).update(fields)
            else:
                consumed.pop(key, None)

    assert consumed == expected
    assert table_dump(clean_redis, STATE_TABLE) == expected
    assert redis_call(clean_redis, "KEYS", f"_{STATE_TABLE}:*") == []
    assert int(redis_call(clean_redis, "SCARD", f"{STATE_TABLE}_DEL_SET")) == 0


def test_op_queue_many_producers_many_consumers_keep_each_producers_order(
    clean_redis: Any, tmp_path: Path
) -> None:
    plans = [queue_plan(p) for p in range(len(QUEUE_PRODUCERS))]
    results = run_workers(
        clean_redis, tmp_path, "queue",
        producers=[{"producer": p} for p in range(len(QUEUE_PRODUCERS))],
        consumers=[{}, {}],
        backlog=lambda: int(redis_call(clean_redis, "LLEN", f"{QUEUE_TABLE}_KEY_VALUE_OP_QUEUE")),
    )
    assert all(results), "every consumer should have popped something"

    def as_op(key: str, op: str, fvs: list[list[str]]) -> Op:
        return ("set" if op == "SET" else "del", key, dict(map(tuple, fvs)))  # type: ignore[arg-type]

    seen: Counter[str] = Counter()
    for batches in results:
        ops = [as_op(*item) for batch in batches for item in batch]
        for p, plan in enumerate(plans):
            mine = [o for o in ops if o[1].startswith(f"p{p}:")]
            seen[str(p)] += len(mine)
            it = iter(plan)  # each consumer's share of a producer's ops is in that producer's order
            assert all(any(o == q for q in it) for o in mine), f"producer {p}'s order broken in a consumer"

    for p, plan in enumerate(plans):
        everything = Counter(
            json.dumps(as_op(*item)) for batches in results for batch in batches for item in batch
            if item[0].startswith(f"p{p}:")
        )
        assert everything == Counter(json.dumps(o) for o in plan), f"producer {p}: lost or invented ops"

    expected = final_state([[plan] for plan in plans])
    assert table_dump(clean_redis, QUEUE_TABLE) == expected


if __name__ == "__main__":
    worker_main(sys.argv[1], json.loads(sys.argv[2]))
