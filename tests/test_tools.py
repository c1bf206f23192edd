"""produce/dump: operations from words, JSON, JSON Lines and swssconfig, round-tripped through Redis."""

from __future__ import annotations

import json

import pytest

from swssd import ConsumerStateTable, ConsumerTable, DBConnector
from swssd.tools.dump import dump_tables, table_names
from swssd.tools.produce import Operation, OperationError, parse_document, parse_words, produce


def test_parse_words() -> None:
    words = ["set", "Ethernet0", "speed=100000", "mtu=9100", "del", "Ethernet4", "set", "E8", "a=b=c"]
    ops = parse_words(words, "PORT_TABLE")
    assert ops == [
        Operation("PORT_TABLE", "SET", "Ethernet0", [("speed", "100000"), ("mtu", "9100")]),
        Operation("PORT_TABLE", "DEL", "Ethernet4", []),
        Operation("PORT_TABLE", "SET", "E8", [("a", "b=c")]),
    ]


@pytest.mark.parametrize("words", [["set"], ["frob", "x"], ["set", "k", "novalue"]])
def test_parse_words_errors(words: list[str]) -> None:
    with pytest.raises(OperationError):
        parse_words(words, "T")


def test_parse_words_needs_table() -> None:
    with pytest.raises(OperationError, match="--table"):
        parse_words(["del", "k"], None)


def test_parse_swssconfig() -> None:
    doc = json.dumps([
        {"ROUTE_TABLE:10.1.0.0/16": {"nexthop": "10.0.0.1", "ifname": "Ethernet0"}, "OP": "SET"},
        {"INTF_TABLE:PortChannel02:fc00::75/126": {}, "OP": "DEL"},
    ])
    ops = parse_document(doc, None, ":", "routes.json")
    assert ops[0] == Operation("ROUTE_TABLE", "SET", "10.1.0.0/16", [("nexthop", "10.0.0.1"), ("ifname", "Ethernet0")])
    assert ops[1] == Operation("INTF_TABLE", "DEL", "PortChannel02:fc00::75/126", [])


def test_parse_jsonl_and_errors() -> None:
    text = '{"op": "SET", "key": "k1", "fvs": [["a", "1"]]}\n\n{"op": "DEL", "key": "k2", "table": "OTHER"}\n'
    assert parse_document(text, "T", ":", "ops.jsonl") == [
        Operation("T", "SET", "k1", [("a", "1")]),
        Operation("OTHER", "DEL", "k2", []),
    ]
    with pytest.raises(OperationError, match=r"ops.jsonl:2"):
        parse_document('{"key": "k"}\n{broken\n', "T", ":", "ops.jsonl")
    with pytest.raises(OperationError, match="SET or DEL"):
        parse_document('[{"op": "FROB", "key": "k"}]', "T", ":", "x.json")


def test_jsonl_values_may_hold_unicode_line_separators() -> None:
    text = '{"key": "k1", "fvs": [["a", "x\u2028y\x85z"]]}\r\n{"key": "k2", "fvs": [["b", "2"]]}\n'
    assert "\u2028" in text and "\x85" in text  # raw in the text, as JSON allows in a string
    assert parse_document(text, "T", ":", "ops.jsonl") == [
        Operation("T", "SET", "k1", [("a", "x\u2028y\x85z")]),
        Operation("T", "SET", "k2", [("b", "2")]),
    ]


async def test_produce_state_then_dump_round_trip(db: DBConnector) -> None:
    words = ["set", "Ethernet0", "speed=100000", "alias=etp1", "set", "Ethernet4", "speed=40000"]
    ops = parse_words(words, "PORT_TABLE")
    ops += parse_document(json.dumps([{"ROUTE_TABLE:10.0.0.0/8": {"nexthop": "1.1.1.1"}, "OP": "SET"}]), None, ":", "r")
    assert await produce(db, ops) == 3
    consumer = ConsumerStateTable(db, "PORT_TABLE")
    got = await consumer.pops()
    assert sorted((k.key, k.op, sorted(k.fvs)) for k in got) == [
        ("Ethernet0", "SET", [("alias", "etp1"), ("speed", "100000")]),
        ("Ethernet4", "SET", [("speed", "40000")]),
    ]
    await ConsumerStateTable(db, "ROUTE_TABLE").pops()
    # pending bookkeeping keys and state hashes are not tables
    await produce(db, parse_words(["set", "Ethernet8", "speed=1"], "PORT_TABLE"))
    assert await table_names(db) == ["PORT_TABLE", "ROUTE_TABLE"]
    dump = await dump_tables(db)
    assert dump == {
        "PORT_TABLE": {"Ethernet0": {"alias": "etp1", "speed": "100000"}, "Ethernet4": {"speed": "40000"}},
        "ROUTE_TABLE": {"10.0.0.0/8": {"nexthop": "1.1.1.1"}},
    }
    await produce(db, parse_words(["del", "Ethernet0"], "PORT_TABLE"))
    await consumer.pops()
    assert list((await dump_tables(db, ["PORT_TABLE"]))["PORT_TABLE"]) == ["Ethernet4", "Ethernet8"]


async def test_produce_queue_keeps_order(db: DBConnector) -> None:
    ops = parse_words(["set", "k", "a=1", "del", "k", "set", "k", "a=2"], "Q")
    await produce(db, ops, kind="queue")
    got = await ConsumerTable(db, "Q").pops()
    assert [(k.key, k.op, k.fvs) for k in got] == [
        ("k", "SET", [("a", "1")]), ("k", "DEL", []), ("k", "SET", [("a", "2")]),
    ]


async def test_dump_pipe_separator(unix_db: DBConnector) -> None:
    ops = parse_document(json.dumps([{"QUEUE|Ethernet0|0": {"scheduler": "scheduler.0"}, "OP": "SET"}]), None, "|", "q")
    assert ops == [Operation("QUEUE", "SET", "Ethernet0|0", [("scheduler", "scheduler.0")])]
    await produce(unix_db, ops)
    await ConsumerStateTable(unix_db, "QUEUE").pops()
    assert await dump_tables(unix_db) == {"QUEUE": {"Ethernet0|0": {"scheduler": "scheduler.0"}}}
