"""The ZMQ channel's message format against BinarySerializer (common/binaryserializer.h).

The golden byte strings below were written by hand from reading serializeBuffer():

* the buffer starts with a size_t holding the number of (key, value) pairs, written last by
  finalize() (m_kvp_count);
* setKeyAndValue() writes each string with setData(): a size_t length, then the bytes;
* the first pair is (dbName, tableName); then per change the pair (key, to_string(fvs.size()))
  followed by one pair per field/value; the op is never written (deserializeBuffer makes a
  change without fields a DEL and any other a SET);
* size_t is 8 bytes, little-endian, on x86_64 and arm64.

tests/test_zmq_interop.py checks the same inputs against the bytes libswsscommon itself writes.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swssd import KeyOpFieldsValues
from swssd.channels.zmq import one_change as readers
from swssd.channels.zmq import serializer
from swssd.channels.zmq.encoder import OneChangeEncoder
from swssd.channels.zmq.one_change import read_one, remember_tail
from swssd.channels.zmq.serializer import (
    MAX_MESSAGE_SIZE,
    MalformedMessageError,
    MessageTooLargeError,
    ZmqMessageError,
    deserialize,
    header,
    read_header,
    serialize,
)

_encoders: dict[bytes, OneChangeEncoder] = {}


def serialize_one(head: bytes, key: str, fvs: list[tuple[str, str]]) -> bytes:
    """The producer's one-change message, from one encoder per table kept across calls (as each
    producer keeps its own), so fields encoded before are used again."""
    encoder = _encoders.get(head)
    if encoder is None:
        encoder = _encoders[head] = OneChangeEncoder(head)
    return encoder.encode(key, fvs)


def n(value: int) -> bytes:
    """A size_t: 8 bytes little-endian."""
    return value.to_bytes(8, "little")


def s(text: bytes) -> bytes:
    """One string as setData writes it."""
    return n(len(text)) + text


KFV = KeyOpFieldsValues

# (db, table, changes, the message)
GOLDEN = [
    pytest.param(
        "APPL_DB", "ROUTE_TABLE",
        [KFV("10.0.0.0/24", "SET", [("nexthop", "10.0.0.1"), ("ifname", "Ethernet0")])],
        # pairs: (db, table) + (key, "2") + 2 field pairs = 4
        n(4) + s(b"APPL_DB") + s(b"ROUTE_TABLE")
        + s(b"10.0.0.0/24") + s(b"2")
        + s(b"nexthop") + s(b"10.0.0.1") + s(b"ifname") + s(b"Ethernet0"),
        id="one-set",
    ),
    pytest.param(
        "APPL_DB", "ROUTE_TABLE",
        [KFV("10.1.0.0/16", "DEL", [])],
        # a DEL is its key with the count "0" and no field pairs: 2 pairs
        n(2) + s(b"APPL_DB") + s(b"ROUTE_TABLE") + s(b"10.1.0.0/16") + s(b"0"),
        id="one-del",
    ),
    pytest.param(
        "DPU_APPL_DB", "DASH_ROUTE_TABLE", [],
        # no changes: only the (db, table) pair
        n(1) + s(b"DPU_APPL_DB") + s(b"DASH_ROUTE_TABLE"),
        id="empty",
    ),
    pytest.param(
        "APPL_DB", "T",
        [
            KFV("a:b|c", "SET", [("f", "x\x00y"), ("é", "中")]),
            KFV("", "DEL", []),
            KFV("k", "SET", [("", "")]),
        ],
        # 1 + (1 + 2) + 1 + (1 + 1) = 7 pairs; lengths count UTF-8 bytes, NUL is a byte like any
        n(7) + s(b"APPL_DB") + s(b"T")
        + s(b"a:b|c") + s(b"2") + s(b"f") + s(b"x\x00y") + s("é".encode()) + s("中".encode())
        + s(b"") + s(b"0")
        + s(b"k") + s(b"1") + s(b"") + s(b""),
        id="separators-nul-utf8-empty",
    ),
    pytest.param(
        "APPL_DB", "T",
        [KFV("k", "SET", [(f"f{i}", str(i)) for i in range(12)])],
        # a count of two digits is the text "12"
        n(14) + s(b"APPL_DB") + s(b"T") + s(b"k") + s(b"12")
        + b"".join(s(f"f{i}".encode()) + s(str(i).encode()) for i in range(12)),
        id="twelve-fields",
    ),
]


@pytest.mark.parametrize(("db", "table", "changes", "golden"), GOLDEN)
def test_golden_bytes(db: str, table: str, changes: list[KeyOpFieldsValues], golden: bytes) -> None:
    assert serialize(db, table, changes) == golden
    assert deserialize(golden) == (db, table, changes)
    assert read_header(golden) == (db, table)


def test_the_op_is_not_sent() -> None:
    """HSET (or any op) with fields reads back as SET; a SET without fields as DEL."""
    data = serialize("APPL_DB", "T", [KFV("a", "HSET", [("f", "v")]), KFV("b", "SET", [])])
    assert deserialize(data)[2] == [KFV("a", "SET", [("f", "v")]), KFV("b", "DEL", [])]


def test_bytes_that_are_not_utf8_survive() -> None:
    raw = b"\xff\xfe\x80 ok"
    text = raw.decode("utf-8", "surrogateescape")
    data = serialize("APPL_DB", "T", [KFV(text, "SET", [("f", text)])])
    assert serialize_one(header("APPL_DB", "T"), text, [("f", text)]) == data
    assert s(raw) + s(b"1") in data
    assert deserialize(data)[2] == [KFV(text, "SET", [("f", text)])]


def test_long_lengths_and_counts() -> None:
    """Lengths and counts above 255 use more than the first byte of the size_t."""
    value = "v" * 70000
    changes = [KFV(f"k{i}", "SET", [("f", value if i == 0 else "x")]) for i in range(300)]
    data = serialize("APPL_DB", "T", changes)
    many = [(f"f{i}", "v") for i in range(1500)]  # more fields than the count cache holds
    assert serialize_one(header("APPL_DB", "T"), "k", many) == serialize("APPL_DB", "T", [KFV("k", "SET", many)])
    assert data[:8] == n(1 + 300 * 2)
    assert deserialize(data)[2] == changes


def test_oversize_is_refused_both_ways() -> None:
    # serializedlen >= MQ_RESPONSE_MAX_COUNT makes C++ sendMsg throw
    big = "x" * (MAX_MESSAGE_SIZE - 40)
    with pytest.raises(MessageTooLargeError, match="16777216"):
        serialize("APPL_DB", "T", [KFV("k", "SET", [("f", big)])])
    fits = "x" * (MAX_MESSAGE_SIZE - 200)
    assert len(serialize("APPL_DB", "T", [KFV("k", "SET", [("f", fits)])])) < MAX_MESSAGE_SIZE
    with pytest.raises(MessageTooLargeError):
        deserialize(n(1) + s(b"APPL_DB") + s(b"T") + bytes(MAX_MESSAGE_SIZE))


VALID = serialize("APPL_DB", "ROUTE_TABLE", [
    KFV("10.0.0.0/24", "SET", [("nexthop", "10.0.0.1"), ("ifname", "Ethernet0")]),
    KFV("10.0.1.0/24", "DEL", []),
])


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "less than the pair count"),
        (b"\x01\x00\x00", "less than the pair count"),
        (n(0), "pair count is 0"),
        (n(0) + s(b"APPL_DB") + s(b"T"), "pair count is 0"),
        (n(1), "needs at least"),
        (n(2**64 - 1) + s(b"APPL_DB") + s(b"T"), "needs at least"),
        (n(1) + s(b"APPL_DB") + n(5) + b"T", "past the end"),
        (n(1) + s(b"APPL_DB") + n(2**63) + b"T" * 8, "past the end"),
        (n(2) + s(b"APPL_DB") + s(b"T") + s(b"k") + n(1), "past the end"),
        (n(1) + s(b"APPL_DB") + s(b"T") + b"\x00", "after the last"),
        (n(2) + s(b"APPL_DB") + s(b"T") + s(b"k") + s(b"x"), "not a decimal number"),
        (n(2) + s(b"APPL_DB") + s(b"T") + s(b"k") + s(b"-1"), "not a decimal number"),
        (n(2) + s(b"APPL_DB") + s(b"T") + s(b"k") + s(b" 1"), "not a decimal number"),
        (n(2) + s(b"APPL_DB") + s(b"T") + s(b"k") + s(b"01"), "not a decimal number"),
        (n(2) + s(b"APPL_DB") + s(b"T") + s(b"k") + s("\N{ARABIC-INDIC DIGIT ONE}".encode()), "not a decimal number"),
        (n(3) + s(b"APPL_DB") + s(b"T") + s(b"k") + s(b"2") + s(b"f") + s(b"v"), "2 fields announced, 1 pairs left"),
        (VALID[:-1], "past the end"),
        (VALID + b"\x00" * 8, "after the last"),
    ],
)
def test_malformed_is_rejected_with_the_reason(data: bytes, reason: str) -> None:
    with pytest.raises(MalformedMessageError, match=reason):
        deserialize(data)


def test_every_truncation_is_rejected() -> None:
    for cut in range(len(VALID)):
        with pytest.raises(MalformedMessageError):
            deserialize(VALID[:cut])


# -- properties -------------------------------------------------------------------------------

texts = st.text(max_size=12) | st.sampled_from(["", ":", "|", "a\x00b", "é", "中文", "🙂"])
changes_st = st.lists(
    st.builds(
        lambda key, fvs: KFV(key, "SET" if fvs else "DEL", fvs),
        texts,
        st.lists(st.tuples(texts, texts), max_size=9),
    ),
    max_size=12,
)


@given(db=texts, table=texts, changes=changes_st)
@settings(max_examples=300, deadline=None)
def test_round_trip(db: str, table: str, changes: list[KeyOpFieldsValues]) -> None:
    data = serialize(db, table, changes)
    assert deserialize(data) == (db, table, changes)
    for change in changes:  # the producer's one-change path writes the same bytes
        assert serialize_one(header(db, table), change.key, change.fvs) == serialize(db, table, [change])
        # again with its fields encoded before, for another key, and with the pairs as lists
        other = KFV(change.key + "x", change.op, change.fvs)
        assert serialize_one(header(db, table), other.key, other.fvs) == serialize(db, table, [other])
        as_lists = [[f, v] for f, v in change.fvs]
        assert serialize_one(header(db, table), change.key, as_lists) == serialize(db, table, [change])  # type: ignore[arg-type]
    assert deserialize(bytearray(data)) == (db, table, changes)
    assert deserialize(memoryview(data)) == (db, table, changes)


@given(st.binary(max_size=400))
@settings(max_examples=1000, deadline=None)
def test_arbitrary_bytes_never_raise_anything_else(data: bytes) -> None:
    try:
        db, table, changes = deserialize(data)
    except ZmqMessageError:
        return
    # accepted: then it is exactly the message that re-serializes to these bytes
    assert serialize(db, table, changes) == data


@given(
    changes=changes_st,
    edits=st.lists(
        st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), min_size=1, max_size=4
    ),
    cut=st.integers(min_value=0),
)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_mutated_messages_never_raise_anything_else(
    changes: list[KeyOpFieldsValues], edits: list[tuple[int, int]], cut: int
) -> None:
    """Valid messages with bytes changed (often a length) and cut short: the clear error or a
    message that is exactly these bytes, never an IndexError, struct.error or a read past the end."""
    data = bytearray(serialize("APPL_DB", "T", changes))
    for pos, byte in edits:
        data[pos % len(data)] = byte
    data = data[: len(data) - cut % 9]
    try:
        db, table, got = deserialize(bytes(data))
    except ZmqMessageError:
        return
    assert serialize(db, table, got) == bytes(data)


@given(changes=changes_st, length=st.integers(min_value=0, max_value=2**64 - 1), which=st.integers(min_value=0))
@settings(max_examples=300, deadline=None)
def test_any_length_value_is_checked_against_the_end(changes: list[KeyOpFieldsValues], length: int, which: int) -> None:
    """Overwrite one string's length with any size_t: accepted only if the message still adds up."""
    data = bytearray(serialize("APPL_DB", "T", changes))
    offsets = []
    pos = 8
    while pos < len(data):
        offsets.append(pos)
        pos += 8 + struct.unpack_from("<Q", data, pos)[0]
    at = offsets[which % len(offsets)]
    original = struct.unpack_from("<Q", data, at)[0]
    struct.pack_into("<Q", data, at, length)
    try:
        deserialize(bytes(data))
    except ZmqMessageError:
        return
    assert length == original or serialize(*deserialize(bytes(data))) == bytes(data)


def test_tables_alternate() -> None:
    """Messages of different tables one after the other read each with its own names (the
    reader remembers the last (db, table) pair, and must never apply it to another)."""
    msgs = [
        ("APPL_DB", "A", [KFV("k", "SET", [("f", "v")])]),
        ("", "", [KFV("k", "DEL", [])]),
        ("APPL_DB", "AB", [KFV("k", "DEL", [])]),
        ("APPL_DB", "A", []),
        ("Ü", "中", [KFV("k", "DEL", [])]),
        ("APPL_DB", "A", [KFV("k", "DEL", [])]),
        ("Ü", "中", []),
    ]
    for _ in range(2):
        for db, table, changes in msgs:
            assert deserialize(serialize(db, table, changes)) == (db, table, changes)


def test_messages_of_one_size_and_lengths_but_other_changes() -> None:
    """The reader keeps the layout of the last message of each size; a message with the same size
    and the very same lengths but other field counts must not be read with it."""
    a = [KFV("a", "SET", [("f", "1")]), KFV("b", "SET", [("g", "2"), ("h", "3")])]
    b = [KFV("a", "SET", [("f", "1"), ("g", "2")]), KFV("b", "SET", [("h", "3")])]
    da, db_ = serialize("D", "T", a), serialize("D", "T", b)
    assert len(da) == len(db_) and da != db_
    for _ in range(3):
        assert deserialize(da) == ("D", "T", a)
        assert deserialize(db_) == ("D", "T", b)
    # the same size, other lengths: a 2-byte key and an empty value where both had 1 byte
    other = [KFV("ab", "SET", [("f", "")]), KFV("b", "SET", [("g", "2"), ("h", "3")])]
    do = serialize("D", "T", other)
    assert len(do) == len(da)
    for _ in range(3):
        assert deserialize(da) == ("D", "T", a)
        assert deserialize(do) == ("D", "T", other)


# -- read_one: one-change messages of a tail seen before ------------------------------------------


def one_change(key: bytes, count: int, tail: bytes, head: bytes | None = None) -> bytes:
    """count | (APPL_DB, T) | key | tail, bytes as given."""
    return n(count) + (head if head is not None else s(b"APPL_DB") + s(b"T")) + s(key) + tail


def learn(data: bytes) -> None:
    """What the server does with a one-change message deserialize() read."""
    changes = deserialize(data)[2]
    assert len(changes) == 1
    remember_tail(data, changes[0])


def test_read_one_reads_what_deserialize_saw_for_any_key() -> None:
    tail = s(b"2") + s(b"nexthop") + s(b"10.0.0.1") + s(b"ifname") + s("Ethernet0 é".encode())
    head = header("APPL_DB", "T")
    first = one_change(b"10.0.0.0/24", 4, tail)
    assert read_one(first, head) is None  # not seen yet
    want = [("nexthop", "10.0.0.1"), ("ifname", "Ethernet0 é")]
    assert deserialize(first) == ("APPL_DB", "T", [KFV("10.0.0.0/24", "SET", want)])
    assert read_one(first, head) is None  # deserialize() keeps nothing: the server asks
    learn(first)
    for key, text in [(b"10.0.1.0/24", "10.0.1.0/24"), (b"", ""), ("中文:|\x00".encode(), "中文:|\x00"),
                      (b"\xff\xfe", b"\xff\xfe".decode("utf-8", "surrogateescape"))]:
        got = read_one(one_change(key, 4, tail), head)
        assert got == KFV(text, "SET", want)
        assert type(got) is KFV and type(got.fvs) is list
    # each change has its own list: changing one does not change the next
    a = read_one(one_change(b"a", 4, tail), head)
    assert a is not None
    a.fvs.append(("x", "y"))
    assert read_one(one_change(b"b", 4, tail), head) == KFV("b", "SET", want)
    # a DEL
    learn(one_change(b"gone", 2, s(b"0")))
    assert read_one(one_change(b"other", 2, s(b"0")), head) == KFV("other", "DEL", [])


def test_read_one_leaves_everything_else_to_deserialize() -> None:
    tail = s(b"1") + s(b"f") + s(b"v")
    head = header("APPL_DB", "T")
    learn(one_change(b"k", 3, tail))
    assert read_one(one_change(b"k", 3, tail), head) == KFV("k", "SET", [("f", "v")])
    others = [
        one_change(b"k", 4, tail),                                 # the pair count of another message
        one_change(b"k", 2, tail),
        one_change(b"k", 3, tail, s(b"APPL_DB") + s(b"U")),        # another table
        one_change(b"k", 3, tail, s(b"STATE_DB") + s(b"T")),       # another db
        one_change(b"k", 3, tail + s(b"x")),                       # a tail never seen
        one_change(b"k", 3, tail)[:-1],                            # truncated
        one_change(b"k", 3, tail)[: 8 + len(head) + 4],            # cut inside the key's length
        n(3) + head + n(len(tail) + 2) + b"k" + tail,               # the key's length past the end
        n(3) + head + n(2**64 - 1) + b"k" + tail,
        n(3) + head + n(0) + b"k" + tail,                           # a key length that leaves "k" + tail
    ]
    for data in others:
        assert read_one(data, head) is None, data
    assert read_one(b"", head) is None
    assert read_one(one_change(b"k", 3, tail), header("APPL_DB", "U")) is None


@given(db=texts, table=texts, changes=changes_st, key=texts,
       edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), max_size=3),
       cut=st.integers(min_value=0, max_value=20))
@settings(max_examples=400, deadline=None)
def test_read_one_is_deserialize_or_nothing(
    db: str, table: str, changes: list[KeyOpFieldsValues], key: str, edits: list[tuple[int, int]], cut: int
) -> None:
    """After the tails of one-change messages were kept, read_one() of any bytes (the same tails with
    another key, changed bytes, cut short) returns exactly what deserialize() reads, or None."""
    head = header(db, table)
    for change in changes:
        learn(serialize(db, table, [change]))  # kept until the cache is full (then all forgotten)
        data = bytearray(serialize(db, table, [KFV(key, change.op, change.fvs)]))
        assert read_one(bytes(data), head) == KFV(key, change.op, change.fvs)
        for pos, byte in edits:
            data[pos % len(data)] = byte
        data = data[: max(0, len(data) - cut)]
        got = read_one(bytes(data), head)
        if got is not None:
            assert deserialize(bytes(data)) == (db, table, [got])


def test_kept_tails_are_bounded() -> None:
    """Many distinct tails (every message its own fields) never keep more than _TAILS of them,
    and a tail longer than _TAIL_BYTES is not kept at all."""
    for i in range(serializer._TAILS + 50):
        learn(serialize("APPL_DB", "T", [KFV("k", "SET", [("seq", str(i))])]))
        assert len(readers._tails) <= serializer._TAILS
    long_fvs = [("f", "v" * serializer._TAIL_BYTES)]
    learn(serialize("APPL_DB", "T", [KFV("k", "SET", long_fvs)]))
    assert read_one(serialize("APPL_DB", "T", [KFV("j", "SET", long_fvs)]), header("APPL_DB", "T")) is None


def test_encoded_fields_are_bounded_and_exact() -> None:
    """The producer keeps at most _TAILS encoded field lists; equal fields in another list or
    tuple give the same bytes; fields that differ only in a way == ignores are not confused."""
    head = header("APPL_DB", "T")
    encoder = OneChangeEncoder(head)
    encoder.JUDGE = 10**9  # never rests here
    sizes = set()
    for i in range(serializer._TAILS + 50):
        encoder.encode("k", [("seq", str(i))])
        sizes.add(len(encoder.kept))
    assert max(sizes) == serializer._TAILS and len(encoder.kept) < serializer._TAILS
    fvs = [("nexthop", "10.0.0.1"), ("ifname", "Ethernet0")]
    first = encoder.encode("a", fvs)
    assert tuple(fvs) in encoder.kept
    assert encoder.encode("a", tuple(fvs)) == first == serialize("APPL_DB", "T", [KFV("a", "SET", fvs)])
    assert encoder.encode("a", [("nexthop", "10.0.0.1"), ("ifname", "Ethernet1")]) != first
    bad = [("f", "\udcff")]  # a surrogate escape: the byte 0xff
    assert encoder.encode("b", bad) == serialize("APPL_DB", "T", [KFV("b", "SET", bad)])
    assert encoder.encode("b", bad).endswith(b"\xff")
    with pytest.raises(MessageTooLargeError):
        encoder.encode("x" * MAX_MESSAGE_SIZE, fvs)
    with pytest.raises(MessageTooLargeError):
        encoder.encode("x" * MAX_MESSAGE_SIZE, fvs)  # its fields kept this time


def test_encoded_fields_rest_while_they_never_repeat() -> None:
    """Fields that never repeat: the encoder keeps a few, then stops looking for PAUSE messages;
    fields that repeat are kept again after it. The bytes are the same throughout."""
    head = header("APPL_DB", "T")
    encoder = OneChangeEncoder(head)
    encoder.JUDGE = 50
    encoder.PAUSE = 200
    for i in range(300):
        change = KFV(f"k{i}", "SET", [("seq", str(i))])
        assert encoder.encode(change.key, change.fvs) == serialize("APPL_DB", "T", [change])
    assert len(encoder.kept) < 150  # 300 without the rest
    fvs = [("nexthop", "10.0.0.1")]
    for i in range(600):
        assert encoder.encode(f"r{i}", fvs) == serialize("APPL_DB", "T", [KFV(f"r{i}", "SET", fvs)])
    assert tuple(fvs) in encoder.kept


def test_deletes_do_not_count_against_the_kept_fields() -> None:
    """Three deletes to a set whose fields repeat: the fields are still found kept every time
    (deletes have no fields to keep), and every message is serialize()'s."""
    head = header("APPL_DB", "T")
    encoder = OneChangeEncoder(head)
    encoder.JUDGE = 50
    fvs = [("nexthop", "10.0.0.1"), ("ifname", "Ethernet0")]
    for i in range(400):
        key = f"r{i}"
        if i % 4:
            assert encoder.encode(key, ()) == serialize("APPL_DB", "T", [KFV(key, "DEL", [])])
        else:
            assert encoder.encode(key, fvs) == serialize("APPL_DB", "T", [KFV(key, "SET", fvs)])
    assert encoder.pause == 0 and tuple(fvs) in encoder.kept


# -- data whose fields do not repeat (issue 27) ---------------------------------------------------

names_st = st.sampled_from(["nexthop", "nexthop_ext", "next", "ifname", "", "é", "weight", "n\x00ul"])
messages_st = st.lists(
    st.lists(
        st.builds(
            lambda key, fvs: KFV(key, "SET" if fvs else "DEL", fvs),
            st.text(max_size=6),
            st.lists(st.tuples(names_st, st.text(max_size=12)), max_size=5),
        ),
        min_size=1, max_size=3,
    ),
    min_size=1, max_size=12,
)


@given(messages=messages_st)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_a_run_of_messages_reads_back_whatever_fields_come(messages: list[list[KeyOpFieldsValues]]) -> None:
    """The reader recognises the fields of the change before by comparing their bytes: names that
    are prefixes of each other, in another order, more or fewer of them, read back exactly."""
    for changes in messages:
        assert deserialize(serialize("APPL_DB", "T", changes)) == ("APPL_DB", "T", changes)


def test_layouts_rest_while_lengths_vary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Values whose lengths vary from message to message: a kept layout is never replaced by
    another of its size, and once most messages find none, layouts are neither looked up nor
    kept for a while (building one costs more than reading the message). Reading stays exact."""
    monkeypatch.setattr(serializer, "_SHAPE_JUDGE", 50)
    monkeypatch.setattr(serializer, "_SHAPE_PAUSE", 200)
    monkeypatch.setattr(serializer, "_shapes", {})
    monkeypatch.setattr(serializer, "_shape_tries", 0)
    monkeypatch.setattr(serializer, "_shape_hits", 0)
    monkeypatch.setattr(serializer, "_shape_pause", 0)
    built = 0
    real_shape_of = serializer._shape_of

    def counting(data: bytes, count: int) -> object:
        nonlocal built
        built += 1
        return real_shape_of(data, count)

    monkeypatch.setattr(serializer, "_shape_of", counting)
    for i in range(300):
        # the same size, other lengths: key and value trade bytes
        change = KFV("k" * (1 + i % 7), "SET", [("v", "x" * (8 - i % 7))])
        assert deserialize(serialize("D", "T", [change])) == ("D", "T", [change])
    assert built <= 60  # 300 without the rest, 1 per size without keeping the first layout
    assert serializer._shape_pause > 0
    repeated = KFV("key", "SET", [("v", "same")])
    for _ in range(600):
        assert deserialize(serialize("D", "T", [repeated])) == ("D", "T", [repeated])
    assert serializer._shapes  # kept again once the rest is over


def test_large_messages_read_string_by_string() -> None:
    """Messages of 64 KiB and more are decoded string by string from the buffer: the same
    changes, non-UTF-8 bytes kept as surrogate escapes, the same errors for a cut message."""
    changes = [
        KFV("big", "SET", [("v", "é" * 40_000), ("w", "x")]),
        KFV("gone", "DEL", []),
        KFV("raw\udcff", "SET", [("f\udcfe", "y" * 70_000)]),
    ]
    data = serialize("APPL_DB", "T", changes)
    assert len(data) >= serializer._LARGE
    assert deserialize(data) == ("APPL_DB", "T", changes)
    for cut in (len(data) - 1, len(data) - 70_001, 30):
        with pytest.raises(MalformedMessageError):
            deserialize(data[:cut])
    with pytest.raises(MalformedMessageError, match="after the last"):
        deserialize(data + b"x")
    bad_count = data.replace(s(b"2"), s(b"9"), 1)
    with pytest.raises(MalformedMessageError):
        deserialize(bad_count)


@given(db=texts, table=texts, changes=changes_st,
       edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), max_size=3),
       cut=st.integers(min_value=0, max_value=20), extra=st.binary(max_size=9))
@settings(max_examples=400, deadline=None)
def test_read_single_is_deserialize_or_nothing(
    db: str, table: str, changes: list[KeyOpFieldsValues], edits: list[tuple[int, int]], cut: int, extra: bytes
) -> None:
    """read_single() (one-change messages, any values) of any bytes (changed, cut short, with
    bytes after) returns exactly what deserialize() reads, or None; a valid ASCII one-change
    message of the table is always read."""
    head = header(db, table)
    for change in changes:
        data = bytearray(serialize(db, table, [change]))
        got = readers.read_single(bytes(data), head)
        if data.isascii():
            assert got == change
        for pos, byte in edits:
            data[pos % len(data)] = byte
        data = data[: max(0, len(data) - cut)] + extra
        got = readers.read_single(bytes(data), head)
        if got is not None:
            assert deserialize(bytes(data)) == (db, table, [got])
    many = serialize(db, table, changes)
    if len(changes) != 1:
        assert readers.read_single(many, head) is None


values_st = st.one_of(texts, st.just("x\udcff"), st.text(min_size=250, max_size=300))


@given(key=texts, fvs=st.lists(st.tuples(texts, values_st), max_size=6))
@settings(max_examples=300, deadline=None)
def test_serialize_one_is_serialize_for_any_text(key: str, fvs: list[tuple[str, str]]) -> None:
    """The one-change encoder (ASCII strings under 256 bytes as text, joined and encoded once;
    anything else string by string) writes exactly serialize()'s bytes."""
    head = header("APPL_DB", "T")
    expected = serialize("APPL_DB", "T", [KFV(key, "SET", fvs)])
    assert serialize_one(head, key, fvs) == expected
    encoder = OneChangeEncoder(head)
    encoder.pause = 1  # resting: encoded afresh, nothing looked up
    assert encoder.encode(key, fvs) == expected
    assert encoder.encode(key, fvs) == expected  # encoded afresh and kept
    assert encoder.encode(key, fvs) == expected  # its fields kept


@pytest.mark.parametrize("size", [0, 1, 126, 127, 128, 129, 255, 256, 70000])
def test_one_change_encoder_at_the_text_bounds(size: int) -> None:
    """Strings under 128 bytes and fewer than 126 fields are encoded as text, anything else
    string by string: the same bytes as serialize() on either side of each bound, for the key,
    a field, a value, the table's name and the number of fields."""
    text = "x" * size
    cases = [(text, [("f", "v")]), ("k", [(text, "v")]), ("k", [("f", text)])]
    if size < 1024:
        cases.append(("k", [(f"f{i}", "v") for i in range(size)]))
    for table in ("T", "T" * min(size, 300)):
        encoder = OneChangeEncoder(header("APPL_DB", table))
        for key, fvs in cases:
            expected = serialize("APPL_DB", table, [KFV(key, "SET" if fvs else "DEL", fvs)])
            assert encoder.encode(key, fvs) == expected
            assert encoder.encode(key, fvs) == expected  # the fields kept
