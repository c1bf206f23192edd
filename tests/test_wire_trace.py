"""Must-hold 2: for every seed example, MONITOR shows the seed trace's command lines exactly.

The traces below are copied verbatim from the seed documents (../shared/seeds); a guard test
re-reads the seeds when they are present so a typo here cannot make the comparison vacuous.
Timestamps and client addresses are stripped; the quoted arguments are compared as text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor import MonitorLine, monitoring, parse_line, script_runs
from swssd import ConsumerStateTable, ConsumerTable, DBConnector, ProducerStateTable, ProducerTable, Table
from swssd.lua import CST_POPS, CT_POPS, PST_APPLY_VIEW, PST_CLEAR, PST_SET, PT_ENQUEUE, TABLE_DUMP
from swssd.redis.embedded_redis import EmbeddedRedis

SEEDS = Path(__file__).resolve().parents[2] / "shared" / "seeds"
T = "PSEUDOTABLE"
FV01 = [("key0", "value0"), ("key1", "value1")]

SET_TRACE = """\
1665211803.270162 [0 127.0.0.1:58720] "EVALSHA" "6875900592cdd1621c6191fe038ec3b29775aa13" "4" "PSEUDOTABLE_CHANNEL@0" "PSEUDOTABLE_KEY_SET" "_PSEUDOTABLE:ENTRY0" "_PSEUDOTABLE:ENTRY0" "G" "ENTRY0" "key0" "value0" "key1" "value1"
1665211803.270207 [0 lua] "SADD" "PSEUDOTABLE_KEY_SET" "ENTRY0"
1665211803.270255 [0 lua] "HSET" "_PSEUDOTABLE:ENTRY0" "key0" "value0"
1665211803.270271 [0 lua] "HSET" "_PSEUDOTABLE:ENTRY0" "key1" "value1"
1665211803.270282 [0 lua] "PUBLISH" "PSEUDOTABLE_CHANNEL@0" "G"
"""  # noqa: E501 - verbatim redis MONITOR lines of the seed traces

BATCHED_SET_TRACE = """\
1665222210.783518 [0 127.0.0.1:57046] "EVALSHA" "bc885d7acbeaba07a97ca9fa2cae169a5d63270a" "5" "PSEUDOTABLE_CHANNEL@0" "PSEUDOTABLE_KEY_SET" "_PSEUDOTABLE:" "ENTRY1" "ENTRY2" "G" "2" "key0" "value0" "key1" "value1" "2" "key0" "value0" "key1" "value1"
1665222210.783544 [0 lua] "SADD" "PSEUDOTABLE_KEY_SET" "ENTRY1"
1665222210.783584 [0 lua] "HSET" "_PSEUDOTABLE:ENTRY1" "key0" "value0"
1665222210.783597 [0 lua] "HSET" "_PSEUDOTABLE:ENTRY1" "key1" "value1"
1665222210.783608 [0 lua] "SADD" "PSEUDOTABLE_KEY_SET" "ENTRY2"
1665222210.783618 [0 lua] "HSET" "_PSEUDOTABLE:ENTRY2" "key0" "value0"
1665222210.783629 [0 lua] "HSET" "_PSEUDOTABLE:ENTRY2" "key1" "value1"
1665222210.783639 [0 lua] "PUBLISH" "PSEUDOTABLE_CHANNEL@0" "G"
"""  # noqa: E501 - verbatim redis MONITOR lines of the seed traces

DEL_TRACE = """\
1665220278.129774 [0 127.0.0.1:51858] "EVALSHA" "88ba6312b8de850b3506966425174d8899aadd93" "4" "PSEUDOTABLE_CHANNEL@0" "PSEUDOTABLE_KEY_SET" "_PSEUDOTABLE:ENTRY0" "PSEUDOTABLE_DEL_SET" "G" "ENTRY0" "''" "''"
1665220278.129793 [0 lua] "SADD" "PSEUDOTABLE_KEY_SET" "ENTRY0"
1665220278.129797 [0 lua] "SADD" "PSEUDOTABLE_DEL_SET" "ENTRY0"
1665220278.129815 [0 lua] "DEL" "_PSEUDOTABLE:ENTRY0"
"""  # noqa: E501 - verbatim redis MONITOR lines of the seed traces

BATCHED_DEL_TRACE = """\
1665222210.783733 [0 127.0.0.1:57046] "EVALSHA" "c6025eb92295c3a694dcac788ed80401da2cee95" "6" "PSEUDOTABLE_CHANNEL@0" "PSEUDOTABLE_KEY_SET" "PSEUDOTABLE_DEL_SET" "_PSEUDOTABLE:" "ENTRY1" "ENTRY2" "G"
1665222210.783749 [0 lua] "SADD" "PSEUDOTABLE_KEY_SET" "ENTRY1"
1665222210.783753 [0 lua] "SADD" "PSEUDOTABLE_DEL_SET" "ENTRY1"
1665222210.783765 [0 lua] "DEL" "_PSEUDOTABLE:ENTRY1"
1665222210.783775 [0 lua] "SADD" "PSEUDOTABLE_KEY_SET" "ENTRY2"
1665222210.783779 [0 lua] "SADD" "PSEUDOTABLE_DEL_SET" "ENTRY2"
1665222210.783788 [0 lua] "DEL" "_PSEUDOTABLE:ENTRY2"
"""  # noqa: E501 - verbatim redis MONITOR lines of the seed traces

CLEAR_TRACE = """\
1665223712.734171 [0 127.0.0.1:60272] "EVALSHA" "a7a229c9946f655aebc07e29d5e4d8ff5055ded8" "3" "PSEUDOTABLE_KEY_SET" "_PSEUDOTABLE" "PSEUDOTABLE_DEL_SET"
1665223712.734182 [0 lua] "DEL" "PSEUDOTABLE_KEY_SET"
1665223712.734194 [0 lua] "KEYS" "_PSEUDOTABLE*"
1665223712.734224 [0 lua] "DEL" "_PSEUDOTABLE:ENTRY2"
1665223712.734235 [0 lua] "DEL" "_PSEUDOTABLE:ENTRY1"
1665223712.734244 [0 lua] "DEL" "PSEUDOTABLE_DEL_SET"
"""  # noqa: E501 - verbatim redis MONITOR lines of the seed traces

APPLY_VIEW_TRACE = """\
1665230361.912064 [0 127.0.0.1:47872] "EVALSHA" "d2494885834676988130076bc645ab8fdee3a1ec" "5" "PSEUDOTABLE_CHANNEL@0" "PSEUDOTABLE_KEY_SET" "PSEUDOTABLE_DEL_SET" "_PSEUDOTABLE:ENTRY0" "_PSEUDOTABLE:ENTRY3" "G" "4" "ENTRY0" "ENTRY1" "ENTRY2" "ENTRY3" "3" "ENTRY0" "ENTRY1" "ENTRY2" "3" "key0" "value0" "key1" "value11" "key3" "value3" "2" "key0" "value0" "key1" "value1"
1665230361.912096 [0 lua] "SADD" "PSEUDOTABLE_KEY_SET" "ENTRY0"
1665230361.912113 [0 lua] "SADD" "PSEUDOTABLE_KEY_SET" "ENTRY1"
1665230361.912124 [0 lua] "SADD" "PSEUDOTABLE_KEY_SET" "ENTRY2"
1665230361.912136 [0 lua] "SADD" "PSEUDOTABLE_KEY_SET" "ENTRY3"
1665230361.912146 [0 lua] "SADD" "PSEUDOTABLE_DEL_SET" "ENTRY0"
1665230361.912156 [0 lua] "SADD" "PSEUDOTABLE_DEL_SET" "ENTRY1"
1665230361.912165 [0 lua] "SADD" "PSEUDOTABLE_DEL_SET" "ENTRY2"
1665230361.912175 [0 lua] "HSET" "_PSEUDOTABLE:ENTRY0" "key0" "value0"
1665230361.912186 [0 lua] "HSET" "_PSEUDOTABLE:ENTRY0" "key1" "value11"
1665230361.912196 [0 lua] "HSET" "_PSEUDOTABLE:ENTRY0" "key3" "value3"
1665230361.912207 [0 lua] "HSET" "_PSEUDOTABLE:ENTRY3" "key0" "value0"
1665230361.912219 [0 lua] "HSET" "_PSEUDOTABLE:ENTRY3" "key1" "value1"
1665230361.912229 [0 lua] "PUBLISH" "PSEUDOTABLE_CHANNEL@0" "G"
"""  # noqa: E501 - verbatim redis MONITOR lines of the seed traces

ALL_TRACES = [SET_TRACE, BATCHED_SET_TRACE, DEL_TRACE, BATCHED_DEL_TRACE, CLEAR_TRACE, APPLY_VIEW_TRACE]


def expected(trace: str) -> list[str]:
    return [parse_line(raw).text for raw in trace.splitlines()]


def captured(lines: list[MonitorLine], sha: str) -> list[str]:
    """The one EVALSHA of `sha` in the capture, with the lua lines it issued."""
    runs = [[ln.text for ln in run] for run in script_runs(lines, sha)]
    assert len(runs) == 1, f"expected one EVALSHA {sha}, MONITOR showed: {[ln.text for ln in lines]}"
    return runs[0]


def table_rows(lines: list[MonitorLine]) -> list[str]:
    return [ln.text for ln in lines if ln.is_lua and ln.text.startswith('"HSET" "PORT_TABLE:')]


def sha_of(trace: str) -> str:
    return parse_line(trace.splitlines()[0]).args[1]


# -- the embedded traces are the seeds' ------------------------------------------------------


@pytest.mark.skipif(not SEEDS.is_dir(), reason="seed documents not available next to the project")
def test_embedded_traces_are_verbatim_seed_lines() -> None:
    seed_lines = {ln.strip() for f in SEEDS.glob("*.txt") for ln in f.read_text().splitlines()}
    for trace in ALL_TRACES:
        for raw in trace.splitlines():
            assert raw in seed_lines, f"not a seed line: {raw}"


# -- ProducerStateTable: the seed 000/001 sequence --------------------------------------------


async def test_producer_state_table_set_del_batched_traces(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    """set ENTRY0, batched set ENTRY1+2, del ENTRY0, batched del ENTRY1+2, as the seeds ran them."""
    pst = ProducerStateTable(db, T)
    steps = [
        (SET_TRACE, pst.set("ENTRY0", FV01)),
        (BATCHED_SET_TRACE, pst.set_many([("ENTRY1", FV01), ("ENTRY2", FV01)])),
        (DEL_TRACE, pst.delete("ENTRY0")),
        (BATCHED_DEL_TRACE, pst.delete_many(["ENTRY1", "ENTRY2"])),
    ]
    for trace, op in steps:
        async with monitoring(clean_redis.port) as mon:
            await op
        assert captured(mon.lines, sha_of(trace)) == expected(trace)


async def test_set_trace_with_mapping_input_is_identical(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    async with monitoring(clean_redis.port) as mon:
        await ProducerStateTable(db, T).set("ENTRY0", dict(FV01))
    assert captured(mon.lines, sha_of(SET_TRACE)) == expected(SET_TRACE)


async def test_buffered_producer_sends_the_same_lines(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    pst = ProducerStateTable(db, T, buffered=True)
    async with monitoring(clean_redis.port) as mon:
        await pst.set("ENTRY0", FV01)
        await pst.set_many([("ENTRY1", FV01), ("ENTRY2", FV01)])
        await pst.delete("ENTRY0")
        await pst.delete_many(["ENTRY1", "ENTRY2"])
        await pst.flush()
    got = [[ln.text for ln in run] for run in script_runs(mon.lines)]
    assert got == [expected(t) for t in (SET_TRACE, BATCHED_SET_TRACE, DEL_TRACE, BATCHED_DEL_TRACE)]


async def test_clear_trace(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    """The state hashes' DEL order follows Redis's KEYS order, so that part compares as a set."""
    pst = ProducerStateTable(db, T)
    await pst.set_many([("ENTRY1", FV01), ("ENTRY2", FV01)])
    async with monitoring(clean_redis.port) as mon:
        await pst.clear()
    got = captured(mon.lines, PST_CLEAR.sha)
    want = expected(CLEAR_TRACE)
    assert got[:3] == want[:3]
    assert got[-1] == want[-1]
    assert sorted(got[3:-1]) == sorted(want[3:-1])
    assert len(got) == len(want)


async def test_apply_view_trace(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    """Seed 001's apply-view example, exactly as given."""
    t = Table(db, T)
    pst = ProducerStateTable(db, T)
    await t.set("ENTRY0", [("key0", "value0"), ("key1", "value1"), ("key2", "value2")])
    await t.set("ENTRY1", FV01)
    await t.set("ENTRY2", FV01)
    pst.create_temp_view()
    await pst.set_many([
        ("ENTRY0", [("key0", "value0"), ("key1", "value11"), ("key3", "value3")]),
        ("ENTRY3", FV01),
    ])
    async with monitoring(clean_redis.port) as mon:
        await pst.apply_temp_view()
    assert captured(mon.lines, PST_APPLY_VIEW.sha) == expected(APPLY_VIEW_TRACE)
    # As the C++ library: pending operations dropped with the clear script, the table read, then one apply.
    evalshas = [ln.args[1] for ln in mon.lines if not ln.is_lua and ln.command == "EVALSHA"]
    assert evalshas == [PST_CLEAR.sha, TABLE_DUMP.sha, PST_APPLY_VIEW.sha]
    assert mon.lines[-1].is_lua and mon.lines[-1].text == '"PUBLISH" "PSEUDOTABLE_CHANNEL@0" "G"'


# -- consumers ---------------------------------------------------------------------------------


async def test_consumer_state_table_pops_trace(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    await ProducerStateTable(db, T).set("ENTRY0", FV01)
    async with monitoring(clean_redis.port) as mon:
        popped = await ConsumerStateTable(db, T).pops()
    assert popped == [("ENTRY0", "SET", FV01)]
    got = captured(mon.lines, CST_POPS.sha)
    assert got[0] == (
        '"EVALSHA" "88270a7c5c90583e56425aca8af8a4b8c39fe757" "3" '
        '"PSEUDOTABLE_KEY_SET" "PSEUDOTABLE:" "PSEUDOTABLE_DEL_SET" "128" "_"'
    )
    # What consumer_state_table_pops.lua issues for one pending key without a delete.
    assert got[1:] == [
        '"SPOP" "PSEUDOTABLE_KEY_SET" "128"',
        '"SREM" "PSEUDOTABLE_DEL_SET" "ENTRY0"',
        '"HGETALL" "_PSEUDOTABLE:ENTRY0"',
        '"HSET" "PSEUDOTABLE:ENTRY0" "key0" "value0"',
        '"HSET" "PSEUDOTABLE:ENTRY0" "key1" "value1"',
        '"DEL" "_PSEUDOTABLE:ENTRY0"',
    ]


async def test_consumer_state_table_pops_trace_uses_batch_size(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    async with monitoring(clean_redis.port) as mon:
        assert await ConsumerStateTable(db, T, pop_batch_size=8192).pops() == []
    got = captured(mon.lines, CST_POPS.sha)
    assert got[0] == (
        '"EVALSHA" "88270a7c5c90583e56425aca8af8a4b8c39fe757" "3" '
        '"PSEUDOTABLE_KEY_SET" "PSEUDOTABLE:" "PSEUDOTABLE_DEL_SET" "8192" "_"'
    )


async def test_producer_table_enqueue_trace(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    pt = ProducerTable(db, "T")
    async with monitoring(clean_redis.port) as mon:
        await pt.set("k", FV01)
        await pt.delete("k")
        await pt.set("k2", [("f", "v")], op="create")
    got = [[ln.text for ln in run] for run in script_runs(mon.lines, PT_ENQUEUE.sha)]
    head = '"EVALSHA" "d171e04fd79e95ca2287f3b067c46ae76a82208b" "2" "T_KEY_VALUE_OP_QUEUE" "T_CHANNEL@0"'
    assert got == [
        [
            f'{head} "k" "[\\"key0\\",\\"value0\\",\\"key1\\",\\"value1\\"]" "SSET" "G"',
            '"LPUSH" "T_KEY_VALUE_OP_QUEUE" "k" "[\\"key0\\",\\"value0\\",\\"key1\\",\\"value1\\"]" "SSET"',
            '"PUBLISH" "T_CHANNEL@0" "G"',
        ],
        [
            f'{head} "k" "{{}}" "DDEL" "G"',
            '"LPUSH" "T_KEY_VALUE_OP_QUEUE" "k" "{}" "DDEL"',
            '"PUBLISH" "T_CHANNEL@0" "G"',
        ],
        [
            f'{head} "k2" "[\\"f\\",\\"v\\"]" "Screate" "G"',
            '"LPUSH" "T_KEY_VALUE_OP_QUEUE" "k2" "[\\"f\\",\\"v\\"]" "Screate"',
            '"PUBLISH" "T_CHANNEL@0" "G"',
        ],
    ]


async def test_consumer_table_pops_trace(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    await ProducerTable(db, "T").set("k", [("f", "v")])
    async with monitoring(clean_redis.port) as mon:
        assert await ConsumerTable(db, "T").pops() == [("k", "SET", [("f", "v")])]
    got = captured(mon.lines, CT_POPS.sha)
    assert got[0] == '"EVALSHA" "2b7119a064d45b01147d729175415e203d76d6ba" "2" "T_KEY_VALUE_OP_QUEUE" "T" "128" "1"'
    assert got[1:] == [
        '"LRANGE" "T_KEY_VALUE_OP_QUEUE" "-384" "-1"',
        '"LTRIM" "T_KEY_VALUE_OP_QUEUE" "0" "-385"',
        '"HSET" "T:k" "f" "v"',
    ]


async def test_consumer_table_pops_trace_without_modify_redis(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    async with monitoring(clean_redis.port) as mon:
        assert await ConsumerTable(db, "T", pop_batch_size=7, modify_redis=False).pops(prefix="P_") == []
    got = captured(mon.lines, CT_POPS.sha)
    assert got[0] == '"EVALSHA" "2b7119a064d45b01147d729175415e203d76d6ba" "2" "T_KEY_VALUE_OP_QUEUE" "P_T" "7" "0"'


async def test_plain_table_set_is_one_hset(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    """swss::Table::set sends one multi-field HSET (formatHSET), and nothing for no fields."""
    async with monitoring(clean_redis.port) as mon:
        await Table(db, T).set("ENTRY0", FV01)
        await Table(db, T).set("ENTRY1", [])
    assert mon.texts() == ['"HSET" "PSEUDOTABLE:ENTRY0" "key0" "value0" "key1" "value1"']


async def test_seed_004_port_table_example(clean_redis: EmbeddedRedis) -> None:
    """Seed 004's EVALSHA lines (its "<hash-of-...>" placeholders are the real SHAs; its lua lines
    are illustrative only and disagree with the script the seed itself quotes, so they are not compared)."""
    fvs = [("alias", "Ethernet5/1"), ("index", "5"), ("lanes", "9,10,11,12"), ("speed", "40000")]
    db = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
    try:
        async with monitoring(clean_redis.port) as mon:
            await ProducerStateTable(db, "PORT_TABLE").set("Ethernet0", fvs)
            await ConsumerStateTable(db, "PORT_TABLE", pop_batch_size=8192).pops()
    finally:
        await db.close()
    heads = [run[0].text for run in script_runs(mon.lines)]
    state = '"_PORT_TABLE:Ethernet0" ' * 4
    assert heads == [
        f'"EVALSHA" "{PST_SET.sha}" "6" "PORT_TABLE_CHANNEL@0" "PORT_TABLE_KEY_SET" {state}"G" '
        '"Ethernet0" "alias" "Ethernet5/1" "index" "5" "lanes" "9,10,11,12" "speed" "40000"',
        f'"EVALSHA" "{CST_POPS.sha}" "3" "PORT_TABLE_KEY_SET" "PORT_TABLE:" "PORT_TABLE_DEL_SET" "8192" "_"',
    ]
    assert table_rows(mon.lines) == [
        '"HSET" "PORT_TABLE:Ethernet0" "alias" "Ethernet5/1"',
        '"HSET" "PORT_TABLE:Ethernet0" "index" "5"',
        '"HSET" "PORT_TABLE:Ethernet0" "lanes" "9,10,11,12"',
        '"HSET" "PORT_TABLE:Ethernet0" "speed" "40000"',
    ]
