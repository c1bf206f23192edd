"""The fold: table contents at an instant, from events in order, with DataFrame aggregations only.

Per host/db/table/key, in `ord` order: SET merges its fields into the entry, DEL removes the
entry. A subscriber's or a zmq table's SET is the whole entry, so it replaces the entry: it is a
reset at its own position, and fields set before it and not in it are gone. Notifications are
not table state and dead-lettered records are annotations (the task was recorded when popped,
and again when the daemon gave up on it): both are left out. An entry with no fields left does
not exist, as a Redis hash cannot be empty.

How: one aggregation per key, without a row per field. Each key's latest reset (a DEL, or a
replacing SET) and its SETs are collected; the SETs at or after the reset are sorted by `ord`
and their fields folded into one map with Spark's higher-order functions (each field's latest
value), in projections after the aggregation. `ord` is unique per record and a DEL has no fields, so "at" only keeps
the SET that did the reset.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from .sqltext import Quote, quote_name, quoting, sql_string

KEY_COLUMNS = ["host", "db", "table", "key"]
#: the kinds whose SET carries the whole entry (it replaces what was there)
REPLACING_KINDS = ("subscriber", "zmq")
STATE_COLUMNS = [*KEY_COLUMNS, "fields"]


def matches_sql(column: str, patterns: Sequence[str] | None, q: Quote = sql_string) -> str | None:
    """Any of the patterns, as SQL text: exact text, or a shell glob when it has * ? or [.
    `q` writes the literals (inputs.quoting: as the session's parser reads them)."""
    if not patterns:
        return None
    name = quote_name(column)
    exact = [p for p in patterns if not any(c in p for c in "*?[")]
    globs = [p for p in patterns if p not in exact]
    conds = [f"({name} IN ({', '.join(q(p) for p in exact)}))"] if exact else []
    conds += [f"({name} RLIKE {q(fnmatch.translate(g))})" for g in globs]
    out = conds[0]
    for c in conds[1:]:
        out = f"({out} OR {c})"
    return out


def matches(column: str, patterns: Sequence[str] | None) -> Column | None:
    """Any of the patterns: exact text, or a shell glob when it has * ? or [."""
    text = matches_sql(column, patterns)
    return None if text is None else F.expr(text)


def timestamp_us(us: int) -> str:
    return f"timestamp_micros({int(us)})"


def select_events(events: DataFrame, conditions: Sequence[str]) -> DataFrame:
    """The events that meet every one of `conditions` (SQL text, see event_conditions): one py4j
    call per condition, see inputs.py."""
    for cond in conditions:
        events = events.where(cond)
    return events


def event_conditions(
    spark: SparkSession,
    *,
    as_of_us: int | None = None,
    since_us: int | None = None,
    hosts: Sequence[str] | None = None,
    dbs: Sequence[str] | None = None,
    tables: Sequence[str] | None = None,
    keys: Sequence[str] | None = None,
) -> list[str]:
    """The conditions an event meets when it is in the time range (both ends inclusive) and matches
    the filters, as SQL text: for select_events, or for a query that marks the events rather than
    leaving the others out (stats counts every line it reads)."""
    q = quoting(spark) if hosts or dbs or tables or keys else sql_string
    conds = [
        matches_sql("host", hosts, q),
        matches_sql("db", dbs, q),
        matches_sql("table", tables, q),
        matches_sql("key", keys, q),
        f"(ts <= {timestamp_us(as_of_us)})" if as_of_us is not None else None,
        f"(ts >= {timestamp_us(since_us)})" if since_us is not None else None,
    ]
    return [c for c in conds if c is not None]


# The fold's higher-order functions, in SQL with fixed lambda variable names (see inputs.py: Python
# lambdas would give every command new generated code to compile).
_SINCE_LAST_RESET = "filter(sets, e -> last_reset IS NULL OR e.ord >= last_reset)"
#: the [field, value] pairs of the SETs since the last reset, the latest first
_PAIRS = f"reverse(flatten(transform(sort_array({_SINCE_LAST_RESET}), e -> e.fvs)))"
# Each field once, with the value of its latest pair (the first in `pairs`), found by
# array_position, which runs natively. Higher-order functions are interpreted, not compiled:
# folding the pairs one by one into a list of entries (an exists and a transform over it per pair)
# cost some ten lambda calls a pair, a tenth of the CPU of a 4M-event replay from a segment; this
# is one a pair and one a field.
_FIELDS = "map_from_arrays(distinct_names, transform(distinct_names, f -> pairs[array_position(names, f) - 1][1]))"
# Not .where(size(fields) > 0): Spark would push that filter below the projection and fold every
# key twice. An array of zero or one entry, exploded, drops the empty ones instead.
_NONEMPTY = f"filter(array(named_struct('fields', {_FIELDS})), s -> size(s.fields) > 0)"


_KEYS_SQL = [quote_name(c) for c in KEY_COLUMNS]
_REPLACING_SQL = ", ".join(f"'{k}'" for k in REPLACING_KINDS)


def fold_state(events: DataFrame) -> DataFrame:
    """host, db, table, key, fields (map) of every entry that exists after the events."""
    live = events.where("((NOT dead_letter) AND (NOT (kind <=> 'notification')))")
    is_del = "(op = 'DEL')"
    # Computed in a projection, not inside the aggregate functions, which would evaluate them
    # row by row without code generation.
    per_key = live.selectExpr(
        *_KEYS_SQL,
        f"CASE WHEN ({is_del} OR (kind IN ({_REPLACING_SQL}))) THEN ord END AS reset",
        f"CASE WHEN (NOT {is_del}) THEN named_struct('ord', ord, 'fvs', fvs) END AS set",
    ).groupBy(*KEY_COLUMNS).agg(
        F.expr("max(reset) AS last_reset"),
        F.expr("collect_list(set) AS sets"),
    )
    # one projection per step: each step's column is read several times by the next
    return (
        per_key.selectExpr(*_KEYS_SQL, f"{_PAIRS} AS pairs")
        .selectExpr(*_KEYS_SQL, "pairs", "transform(pairs, p -> p[0]) AS names")
        .selectExpr(*_KEYS_SQL, "pairs", "names", "array_distinct(names) AS distinct_names")
        .selectExpr(*_KEYS_SQL, f"inline({_NONEMPTY})")
    )
