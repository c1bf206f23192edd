"""PendingMap against orchagent's Consumer::addToSync (the cases of sonic-swss consumer_ut.cpp)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from swssd import DEL_COMMAND, SET_COMMAND, KeyOpFieldsValues
from swssd.orch.pending import Entry, PendingMap, merge_fields

K = "key"
SET_A = KeyOpFieldsValues(K, SET_COMMAND, [("field1", "value1_a"), ("field2", "value2_a")])
SET_B = KeyOpFieldsValues(K, SET_COMMAND, [("field1", "value1_b"), ("field2", "value2_b")])
SET_NEW = KeyOpFieldsValues(K, SET_COMMAND, [("field1", "value1_b"), ("field3", "value3_a")])
DEL = KeyOpFieldsValues(K, DEL_COMMAND, [])


def pending_of(*tasks: KeyOpFieldsValues) -> list[KeyOpFieldsValues]:
    p = PendingMap()
    p.add_many(tasks)
    assert len(p) == len(p.tasks())
    return p.tasks()


def test_set() -> None:
    assert pending_of(SET_A) == [SET_A]


def test_del() -> None:
    assert pending_of(DEL) == [DEL]


def test_set_then_del_leaves_del() -> None:
    assert pending_of(SET_A, DEL) == [DEL]


def test_del_then_set_keeps_both_in_order() -> None:
    for _ in range(3):
        assert pending_of(DEL, SET_A) == [DEL, SET_A]


def test_set_del_set_leaves_del_then_set() -> None:
    assert pending_of(SET_A, DEL, SET_A) == [DEL, SET_A]


def test_set_del_set_repeated_in_one_batch() -> None:
    assert pending_of(*[SET_A, DEL, SET_A] * 100) == [DEL, SET_A]


def test_del_set_set_new_values() -> None:
    assert pending_of(DEL, SET_A, SET_B) == [DEL, SET_B]


def test_del_set_set_new_fields_moves_rewritten_field_last() -> None:
    # consumer_ut.cpp ConsumerAddToSync_Del_Set_Setnew1: field1 is erased and appended.
    expected = KeyOpFieldsValues(
        K, SET_COMMAND, [("field2", "value2_a"), ("field1", "value1_b"), ("field3", "value3_a")]
    )
    assert pending_of(DEL, SET_A, SET_NEW) == [DEL, expected]


def test_set_set_merges() -> None:
    merged = pending_of(SET_A, SET_NEW)
    assert merged == [
        KeyOpFieldsValues(K, SET_COMMAND, [("field2", "value2_a"), ("field1", "value1_b"), ("field3", "value3_a")])
    ]


def test_del_del_is_one_del() -> None:
    assert pending_of(DEL, DEL) == [DEL]


def test_del_set_del_is_one_del() -> None:
    assert pending_of(DEL, SET_A, DEL) == [DEL]


def test_independent_keys_keep_arrival_order() -> None:
    a = KeyOpFieldsValues("a", SET_COMMAND, [("f", "1")])
    b = KeyOpFieldsValues("b", DEL_COMMAND, [])
    c = KeyOpFieldsValues("c", SET_COMMAND, [("f", "2")])
    a2 = KeyOpFieldsValues("a", SET_COMMAND, [("g", "3")])
    assert pending_of(a, b, c, a2) == [KeyOpFieldsValues("a", SET_COMMAND, [("f", "1"), ("g", "3")]), b, c]


def test_repeated_field_in_one_set_keeps_last() -> None:
    assert merge_fields([("f", "0"), ("g", "1")], [("f", "a"), ("f", "b")]) == [("g", "1"), ("f", "b")]


def test_take_then_new_data_then_put_back_merges_behind_the_failed_task() -> None:
    p = PendingMap()
    p.add(SET_A)
    entry = p.take(K)
    entry.attempts = 2
    p.add(SET_NEW)  # arrives while SET_A is being handled
    p.put_back(entry)  # SET_A failed: it stays first, the new data merges into it
    assert p.tasks() == [
        KeyOpFieldsValues(K, SET_COMMAND, [("field2", "value2_a"), ("field1", "value1_b"), ("field3", "value3_a")])
    ]
    assert p.head(K).attempts == 2  # type: ignore[union-attr]


def test_put_back_under_a_newer_del_is_replaced() -> None:
    p = PendingMap()
    p.add(SET_A)
    entry = p.take(K)
    p.add_many([DEL, SET_B])
    p.put_back(entry)
    assert p.tasks() == [DEL, SET_B]
    assert len(p) == 2


def test_put_back_del_keeps_later_set_after_it() -> None:
    p = PendingMap()
    p.add_many([DEL, SET_A])
    entry = p.take(K)
    assert entry.task == DEL and p.tasks() == [SET_A]
    p.put_back(entry)
    assert p.tasks() == [DEL, SET_A]


def test_entry_defaults() -> None:
    e = Entry(SET_A)
    assert (e.attempts, e.not_before, e.retry_epoch) == (0, 0.0, None)


# -- the pending map means the same as the sequence it merged ---------------------------

FIELDS = st.sampled_from(["a", "b", "c"])
OPS = st.lists(
    st.one_of(
        st.just(KeyOpFieldsValues(K, DEL_COMMAND, [])),
        st.lists(st.tuples(FIELDS, st.sampled_from(["1", "2", "3"])), min_size=1, max_size=3).map(
            lambda fvs: KeyOpFieldsValues(K, SET_COMMAND, fvs)
        ),
    ),
    max_size=12,
)


def apply(state: dict[str, str] | None, tasks: list[KeyOpFieldsValues]) -> dict[str, str] | None:
    """The consumer-side table: SET merges fields into the entry, DEL removes it."""
    for t in tasks:
        if t.op == DEL_COMMAND:
            state = None
        else:
            state = {**(state or {}), **dict(t.fvs)}
    return state


@settings(max_examples=300, deadline=None)
@given(OPS, st.one_of(st.none(), st.just({"a": "0", "z": "9"})))
def test_pending_is_equivalent_to_the_sequence(ops: list[KeyOpFieldsValues], start: dict[str, str] | None) -> None:
    merged = pending_of(*ops)
    assert len(merged) <= 2
    if len(merged) == 2:
        assert [t.op for t in merged] == [DEL_COMMAND, SET_COMMAND]
    assert apply(start, merged) == apply(start, ops)


# -- other kinds of tables (issue 8) ---------------------------------------------------------


def test_replace_mode_keeps_only_the_newest_full_entry() -> None:
    """A subscriber table's SET is the whole entry: field2 removed since SET_A must not survive."""
    p = PendingMap("replace")
    p.add_many([SET_A, SET_NEW])
    assert p.tasks() == [SET_NEW]
    p = PendingMap("replace")
    p.add_many([SET_A, DEL, SET_B, SET_NEW])
    assert p.tasks() == [DEL, SET_NEW]


def test_replace_mode_put_back_takes_the_newer_entry() -> None:
    p = PendingMap("replace")
    p.add(SET_A)
    entry = p.take(K)
    entry.attempts = 2
    p.add(SET_NEW)
    p.put_back(entry)
    (kept,) = p.entries_of(K)
    assert kept.task == SET_NEW and kept.attempts == 2


def test_none_mode_keeps_every_task_in_arrival_order() -> None:
    other = KeyOpFieldsValues("other", SET_COMMAND, [("f", "v")])
    p = PendingMap("none")
    p.add_many([SET_A, other, SET_B, DEL, SET_A])
    assert p.tasks() == [SET_A, other, SET_B, DEL, SET_A]
    assert len(p) == 5
    slots = [slot for slot, _ in p.snapshot()]
    assert len(set(slots)) == 5  # one task a slot: a worker pass runs them in arrival order
    first = p.take(slots[0])
    assert first.task == SET_A
    p.put_back(first)  # a retried notification goes behind the others
    assert p.tasks() == [other, SET_B, DEL, SET_A, SET_A]


def test_the_oldest_in_flight_batch_is_kept_through_merges_takes_and_put_backs() -> None:
    """low_water() is what the reliable pop may not remove from the in-flight record."""
    p = PendingMap()
    assert p.low_water() is None
    p.add(KeyOpFieldsValues("a", "SET", [("f", "1")]), seq=3)
    p.add(KeyOpFieldsValues("a", "SET", [("f", "2")]), seq=5)  # merged: keeps batch 3
    p.add(KeyOpFieldsValues("b", "SET", [("f", "1")]), seq=4)
    p.add(KeyOpFieldsValues("r", "SET", [("f", "1")]))  # reconcile: no batch
    assert p.low_water() == 3
    p.add(KeyOpFieldsValues("a", "DEL", []), seq=6)  # replaces, still holds batch 3's key
    assert p.low_water() == 3
    entry = p.take("a")
    assert p.low_water() == 3, "a task being handled still needs its batches"
    p.add(KeyOpFieldsValues("a", "SET", [("f", "3")]), seq=7)
    p.put_back(entry)  # the later SET merges behind it
    assert [e.seq for e in p.entries_of("a")] == [3, 7]
    p.done(p.take("a"))
    assert p.low_water() == 4
    p.rebase(2)
    assert {e.seq for e in p.live()} == {2}
    for key in ("b", "r", "a"):
        p.done(p.take(key))
    assert p.low_water() is None and not p.live()
