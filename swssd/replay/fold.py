"""The fold: table contents at an instant, from events in order, with DataFrame aggregations only.

Per host/db/table/key, in `ord` order: SET merges its fields into the entry, DEL removes the
entry. A subscriber's SET carries the entry's full fields, so it replaces the entry: it is a DEL
then a SET at its own position, and fields set before it and not in it are gone. Notifications
are not table state and dead-lettered records are annotations (the task was recorded when
popped, and again when the daemon gave up on it): both are left out. An entry with no fields
left does not exist, as a Redis hash cannot be empty.

How, without sorting each key's events: every SET field becomes one row and every DEL one row
with a null field (a subscriber's SET gives both, the null one first); one aggregation per
(key, field) keeps the latest value (and, in the null field's group, the latest deletion); a
second, much smaller aggregation per key keeps the fields set at or after the latest deletion.
`ord` is unique per record and a DEL has no fields, so "at" only keeps the fields of the
subscriber SET that did the deletion.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

KEY_COLUMNS = ["host", "db", "table", "key"]
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


def fold_state(events: DataFrame) -> DataFrame:
    """host, db, table, key, fields (map) of every entry that exists after the events."""
    live = events.where(~F.col("dead_letter") & ~F.col("kind").eqNullSafe("notification"))
    delete_row = F.array(F.array(F.lit(None).cast("string"), F.lit(None).cast("string")))
    items = (
        F.when(F.col("op") == "DEL", delete_row)
        .when(F.col("kind") == "subscriber", F.concat(delete_row, F.col("fvs")))
        .otherwise(F.col("fvs"))
    )
    rows = live.select(*KEY_COLUMNS, "ord", F.posexplode(items).alias("pos", "fv"))
    latest = rows.groupBy(*KEY_COLUMNS, F.col("fv")[0].alias("field")).agg(
        F.max(F.struct("ord", "pos", F.col("fv")[1].alias("value"))).alias("last")
    )
    per_key = latest.groupBy(*KEY_COLUMNS).agg(
        F.max(F.when(F.col("field").isNull(), F.col("last.ord"))).alias("deleted_at"),
        F.collect_list(
            F.when(
                F.col("field").isNotNull(),
                F.struct("field", F.col("last.ord").alias("ord"), F.col("last.value").alias("value")),
            )
        ).alias("items"),
    )
    kept = F.filter(
        "items", lambda x: F.col("deleted_at").isNull() | (x["ord"] >= F.col("deleted_at"))
    )
    fields = F.map_from_entries(F.transform(kept, lambda x: F.struct(x["field"], x["value"])))
    return (
        per_key.select(*KEY_COLUMNS, fields.alias("fields"))
        .where(F.size("fields") > 0)
    )
