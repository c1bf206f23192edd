"""The fold: table contents at an instant, from events in order, with DataFrame aggregations only.

Per host/db/table/key, in `ord` order: SET merges its fields into the entry, DEL removes the
entry. A subscriber's or a zmq table's SET is the whole entry, so it replaces the entry: it is a
reset at its own position, and fields set before it and not in it are gone. Notifications are
not table state and dead-lettered records are annotations (the task was recorded when popped,
and again when the daemon gave up on it): both are left out. An entry with no fields left does
not exist, as a Redis hash cannot be empty.

How: one aggregation per key, without a row per field. Each key's latest reset (a DEL, or a
replacing SET) and its SETs are collected; the SETs at or after the reset are sorted by `ord`
and their fields folded into one map with Spark's higher-order functions, in the projection
after the aggregation. `ord` is unique per record and a DEL has no fields, so "at" only keeps
the SET that did the reset.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

KEY_COLUMNS = ["host", "db", "table", "key"]
#: the kinds whose SET carries the whole entry (it replaces what was there)
REPLACING_KINDS = ("subscriber", "zmq")
STATE_COLUMNS = [*KEY_COLUMNS, "fields"]


def matches(column: str, patterns: Sequence[str] | None) -> Column | None:
    """Any of the patterns: exact text, or a shell glob when it has * ? or [."""
    if not patterns:
        return None
    exact = [p for p in patterns if not any(c in p for c in "*?[")]
    globs = [p for p in patterns if p not in exact]
    conds = [F.col(column).isin(exact)] if exact else []
    conds += [F.col(column).rlike(fnmatch.translate(g)) for g in globs]
    out = conds[0]
    for c in conds[1:]:
        out = out | c
    return out


def timestamp_us(us: int) -> Column:
    return F.expr(f"timestamp_micros({int(us)})")


def select_events(
    events: DataFrame,
    *,
    as_of_us: int | None = None,
    since_us: int | None = None,
    hosts: Sequence[str] | None = None,
    dbs: Sequence[str] | None = None,
    tables: Sequence[str] | None = None,
    keys: Sequence[str] | None = None,
) -> DataFrame:
    """Events in a time range (both ends inclusive) and matching the filters."""
    conds = [
        matches("host", hosts),
        matches("db", dbs),
        matches("table", tables),
        matches("key", keys),
        F.col("ts") <= timestamp_us(as_of_us) if as_of_us is not None else None,
        F.col("ts") >= timestamp_us(since_us) if since_us is not None else None,
    ]
    for cond in conds:
        if cond is not None:
            events = events.where(cond)
    return events


# The fold's higher-order functions, in SQL with fixed lambda variable names (see inputs.py: Python
# lambdas would give every command new generated code to compile).
_SINCE_LAST_RESET = "filter(sets, e -> last_reset IS NULL OR e.ord >= last_reset)"
_PAIRS = f"flatten(transform(sort_array({_SINCE_LAST_RESET}), e -> e.fvs))"
_SET_FIELD = (
    "(entries, p) -> CASE WHEN exists(entries, x -> x.field = p[0])"
    " THEN transform(entries, x -> CASE WHEN x.field = p[0]"
    " THEN named_struct('field', p[0], 'value', p[1]) ELSE x END)"
    " ELSE concat(entries, array(named_struct('field', p[0], 'value', p[1]))) END"
)
_FIELDS = (
    f"map_from_entries(aggregate({_PAIRS}, cast(array() as array<struct<field:string,value:string>>),"
    f" {_SET_FIELD}))"
)
# Not .where(size(fields) > 0): Spark would push that filter below the projection and fold every
# key twice. An array of zero or one entry, exploded, drops the empty ones instead.
_NONEMPTY = f"filter(array(named_struct('fields', {_FIELDS})), s -> size(s.fields) > 0)"


def fold_state(events: DataFrame) -> DataFrame:
    """host, db, table, key, fields (map) of every entry that exists after the events."""
    kind = F.col("kind")
    live = events.where(~F.col("dead_letter") & ~kind.eqNullSafe("notification"))
    is_del = F.col("op") == "DEL"
    resets = is_del | kind.isin(*REPLACING_KINDS)
    # Computed in a projection, not inside the aggregate functions, which would evaluate them
    # row by row without code generation.
    per_key = live.select(
        *KEY_COLUMNS,
        F.when(resets, F.col("ord")).alias("reset"),
        F.when(~is_del, F.struct(F.col("ord").alias("ord"), F.col("fvs").alias("fvs"))).alias("set"),
    ).groupBy(*KEY_COLUMNS).agg(
        F.max("reset").alias("last_reset"),
        F.collect_list("set").alias("sets"),
    )
    return per_key.select(*KEY_COLUMNS, F.inline(F.expr(_NONEMPTY)))
