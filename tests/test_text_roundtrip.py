"""Must-hold 6: any text survives every channel unchanged."""

from __future__ import annotations

import pytest

from swssd import (
    ConsumerStateTable,
    ConsumerTable,
    DBConnector,
    ProducerStateTable,
    ProducerTable,
    Table,
)
from swssd.channels.table import strip_special

TEXTS = [
    "colon:inside",
    "pipe|inside",
    "both:and|mixed",
    "with space  and trailing ",
    "line1\nline2\r\n",
    'double"quote',
    "single'quote",
    "back\\slash\\",
    "tab\tand\x07bell",
    "Ünïcødé ✓ 中文",
    "emoji 😀 and ℵ",
    "json-ish [\"a\",{\"b\":1}] {}",
    "null\x00byte",
    "/slash/",
    "*glob?[chars]",
]
EMPTY = ""
MEGABYTE = "".join(chr(0x20 + (i * 7919) % 0x5E) for i in range(1 << 20))
BIG_UNICODE = "中文✓Ü" * (1 << 18)  # 1 Mi characters, 2.75 MiB of UTF-8

# Keys must be non-empty for state tables (as in C++); fields and values may be anything.
KEYS = TEXTS
FVS = [(t, t[::-1]) for t in TEXTS] + [("", "empty field name"), ("empty value", ""), ("big", MEGABYTE)]


@pytest.fixture(params=["db", "unix_db"])
def conn(request: pytest.FixtureRequest) -> DBConnector:
    return request.getfixturevalue(request.param)


def as_dict(pairs: list[tuple[str, str]]) -> dict[str, str]:
    return dict(pairs)


async def drain_state(db: DBConnector, name: str) -> dict[str, tuple[str, dict[str, str]]]:
    out: dict[str, tuple[str, dict[str, str]]] = {}
    cst = ConsumerStateTable(db, name, pop_batch_size=1000)
    while items := await cst.pops():
        for key, op, fvs in items:
            out[key] = (op, as_dict(fvs))
    return out


async def test_producer_state_table_set(conn: DBConnector) -> None:
    pst = ProducerStateTable(conn, "TXT")
    for key in KEYS:
        await pst.set(key, FVS)
    got = await drain_state(conn, "TXT")
    assert set(got) == set(KEYS)
    for key in KEYS:
        assert got[key] == ("SET", dict(FVS))
        assert as_dict(await Table(conn, "TXT").get(key) or []) == dict(FVS)
    assert sorted(await Table(conn, "TXT").keys()) == sorted(KEYS)


async def test_producer_state_table_set_many_and_delete_many(conn: DBConnector) -> None:
    pst = ProducerStateTable(conn, "TXT")
    await pst.set_many([(key, FVS) for key in KEYS])
    got = await drain_state(conn, "TXT")
    assert got == {key: ("SET", dict(FVS)) for key in KEYS}
    await pst.delete_many(KEYS[:5])
    for key in KEYS[5:8]:
        await pst.delete(key)
    got = await drain_state(conn, "TXT")
    assert got == {key: ("DEL", {}) for key in KEYS[:8]}
    assert sorted(await Table(conn, "TXT").keys()) == sorted(KEYS[8:])


async def test_big_unicode_value_state_table(db: DBConnector) -> None:
    await ProducerStateTable(db, "TXT").set("k", [("big", BIG_UNICODE)])
    assert await ConsumerStateTable(db, "TXT").pops() == [("k", "SET", [("big", BIG_UNICODE)])]
    assert await Table(db, "TXT").hget("k", "big") == BIG_UNICODE


async def test_producer_table_to_consumer_table(conn: DBConnector) -> None:
    pt = ProducerTable(conn, "TXT")
    expected = []
    for key in [*KEYS, EMPTY]:
        await pt.set(key, FVS)
        expected.append((key, "SET", FVS))
    await pt.delete(KEYS[0])
    expected.append((KEYS[0], "DEL", []))
    await pt.set("big", [("v", BIG_UNICODE)])
    expected.append(("big", "SET", [("v", BIG_UNICODE)]))
    got = []
    ct = ConsumerTable(conn, "TXT", pop_batch_size=7)
    while items := await ct.pops():
        got.extend(items)
    assert got == expected
    # The C++ script writes "TXT:" + key (or bare "TXT" for the empty key) whatever the separator.
    for key in KEYS[1:]:
        assert await conn.redis.hgetall(f"TXT:{key}") == dict(FVS)
    assert await conn.redis.hgetall("TXT") == dict(FVS)
    assert await conn.redis.exists(f"TXT:{KEYS[0]}") == 0


async def test_table(conn: DBConnector) -> None:
    t = Table(conn, "TXT")
    for key in [*KEYS, EMPTY]:
        await t.set(key, FVS)
    for key in [*KEYS, EMPTY]:
        # Redis holds the text unchanged; get/hget then cut at '@' as C++ Table::get/hget (issue 8)
        assert await conn.redis.hgetall(t.key_name(key)) == dict(FVS)
        got = await t.get(key) or []
        assert sorted(got) == sorted((strip_special(f), v) for f, v in FVS)  # big hashes are unordered
        for field, value in FVS:
            assert await t.hget(key, field) == strip_special(value)
    await t.hset(KEYS[0], "Ü:|\n", BIG_UNICODE)
    assert await t.hget(KEYS[0], "Ü:|\n") == BIG_UNICODE
    dump = await t.dump()
    assert set(dump) == set(KEYS)  # the empty key is the bare table name, not a TXT<sep>* entry
    for key in KEYS[1:]:
        assert dump[key] == dict(FVS)
    assert dump[KEYS[0]] == {**dict(FVS), "Ü:|\n": BIG_UNICODE}


async def test_apply_temp_view(conn: DBConnector) -> None:
    t = Table(conn, "TXT")
    old_fvs = [*FVS[:3], ("dropped field ✓", "x")]
    for key in KEYS[:6]:
        await t.set(key, old_fvs)
    await t.set("unchanged ✓", FVS)
    pst = ProducerStateTable(conn, "TXT")
    pst.create_temp_view()
    await pst.set_many([(key, FVS) for key in KEYS[3:]])
    await pst.set("unchanged ✓", FVS)
    await pst.apply_temp_view()
    got = await drain_state(conn, "TXT")
    want = {key: ("DEL", {}) for key in KEYS[:3]}
    want.update({key: ("SET", dict(FVS)) for key in KEYS[3:]})
    assert got == want
    assert await t.dump() == {key: dict(FVS) for key in [*KEYS[3:], "unchanged ✓"]}


async def test_text_survives_track_deletes(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "TXT")
    await pst.set_many([(key, FVS) for key in KEYS])
    await ConsumerStateTable(db, "TXT", pop_batch_size=1000).pops()
    await pst.delete_many(KEYS)
    await pst.set_many([(key, FVS[:2]) for key in KEYS])
    items = await ConsumerStateTable(db, "TXT", pop_batch_size=1000, track_deletes=True).pops()
    assert sorted(items) == sorted([(k, "DEL", []) for k in KEYS] + [(k, "SET", FVS[:2]) for k in KEYS])
    assert await Table(db, "TXT").dump() == {k: dict(FVS[:2]) for k in KEYS}
