"""stats: per host/table event counts, SET/DEL split, distinct keys, events per minute, flapping
keys, and notifications per channel and op.

One aggregation over the events, per key, notification op and minute, is cached; every figure is
derived from it, so the input is read once, and aggregated further with plain sums, counts and
bitwise ORs (no distinct counts, no sets: each costs Spark a slower aggregation). A
notification's op is its own (any text), so it is counted apart from SET and DEL; its key is the
message's data, so notifications are ranked per channel and op rather than among the flapping
keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..capture.format import KINDS
from .fold import KEY_COLUMNS

TABLE_COLUMNS = ["host", "db", "table"]
SUMS = ["events", "sets", "dels", "notifications", "dead_letters"]


@dataclass
class Stats:
    tables: DataFrame
    """host, db, table, kind, events, sets, dels, notifications, dead_letters, distinct_keys,
    first_ts, last_ts, active_minutes, events_per_minute (events over the span, at least one
    minute), peak_per_minute"""
    keys: DataFrame
    """host, db, table, kind, key, events, sets, dels, dead_letters, first_ts, last_ts,
    active_minutes of table entries (not notifications), the most changed first (a key that
    keeps being set and deleted is flapping)"""
    notifications: DataFrame
    """host, db, table (the channel), op, events, dead_letters, first_ts, last_ts,
    active_minutes, peak_per_minute, the most frequent first"""


def _count(cond: Column) -> Column:
    return F.sum(F.when(cond, 1).otherwise(0))


#: the kinds a record may have, each a bit of a mask: a bitwise OR aggregates them in Spark's
#: plain hash aggregation (a set of strings would take its slower object aggregation)
KIND_BITS = sorted(KINDS)


def _kind_bit() -> Column:
    """The bit of a record's kind; a record without one counts as `state`, the way it replays."""
    kind = F.coalesce(F.col("kind"), F.lit("state"))
    bit = F.lit(0)
    for i, name in enumerate(KIND_BITS):
        bit = F.when(kind == name, F.lit(1 << i)).otherwise(bit)
    return bit


def _kinds_text(mask: Column) -> Column:
    """The kinds of a mask, comma-separated in name order."""
    return F.concat_ws(",", *(F.when((mask.bitwiseAND(1 << i)) != 0, F.lit(name))
                              for i, name in enumerate(KIND_BITS))).alias("kind")


def _minute() -> Column:
    """The UTC minute of `ts`, by arithmetic: date_trunc goes through the session's time zone
    rules for every event (about a fifth of the aggregation's time)."""
    micros = F.unix_micros("ts")
    return F.timestamp_micros(micros - F.pmod(micros, F.lit(60_000_000))).alias("minute")


def compute(events: DataFrame) -> Stats:
    """The figures, as DataFrames over one cached per-minute aggregation (one row per key,
    notification op and minute: each count below is a count of its rows, never a distinct count)."""
    is_notification = F.col("kind").eqNullSafe("notification")
    per_minute = (
        events.groupBy(
            *KEY_COLUMNS,
            F.when(is_notification, F.col("op")).alias("notification_op"),
            _minute(),
        )
        .agg(
            F.bit_or(_kind_bit()).alias("kinds"),
            F.count(F.lit(1)).alias("events"),
            _count(~is_notification & (F.col("op") == "SET")).alias("sets"),
            _count(~is_notification & (F.col("op") == "DEL")).alias("dels"),
            _count(is_notification).alias("notifications"),
            _count(F.col("dead_letter")).alias("dead_letters"),
            F.min("ts").alias("first_ts"),
            F.max("ts").alias("last_ts"),
        )
        .persist()
    )
    span = [F.min("first_ts").alias("first_ts"), F.max("last_ts").alias("last_ts")]
    keys = (
        per_minute.where(F.col("notification_op").isNull())
        .groupBy(*KEY_COLUMNS)
        .agg(F.bit_or("kinds").alias("kinds"), *(F.sum(c).alias(c) for c in ("events", "sets", "dels", "dead_letters")),
             *span, F.count(F.lit(1)).alias("active_minutes"))
        .select(*TABLE_COLUMNS, _kinds_text(F.col("kinds")), "key", "events", "sets", "dels", "dead_letters",
                "first_ts", "last_ts", "active_minutes")
        .orderBy(F.desc("events"), F.desc("dels"), *KEY_COLUMNS)
    )
    op_columns: list[Column | str] = [*TABLE_COLUMNS, F.col("notification_op").alias("op")]
    op_minutes = (
        per_minute.where(F.col("notification_op").isNotNull())
        .groupBy(*op_columns, "minute")
        .agg(F.sum("events").alias("n"), F.sum("dead_letters").alias("d"), *span)
    )
    notifications = (
        op_minutes.groupBy(*TABLE_COLUMNS, "op")
        .agg(F.sum("n").alias("events"), F.sum("d").alias("dead_letters"), *span,
             F.count(F.lit(1)).alias("active_minutes"), F.max("n").alias("peak_per_minute"))
        .orderBy(F.desc("events"), *TABLE_COLUMNS, "op")
    )
    minutes = per_minute.groupBy(*TABLE_COLUMNS, "minute").agg(F.sum("events").alias("n"))
    peaks = minutes.groupBy(*TABLE_COLUMNS).agg(
        F.max("n").alias("peak_per_minute"), F.count(F.lit(1)).alias("active_minutes")
    )
    span_minutes = F.greatest(
        F.lit(1.0),
        (F.unix_micros("last_ts") - F.unix_micros("first_ts")) / F.lit(60_000_000.0),
    )
    sums = [F.sum(c).alias(c) for c in SUMS]
    table_keys = per_minute.groupBy(*TABLE_COLUMNS, "key").agg(F.bit_or("kinds").alias("kinds"), *sums, *span)
    tables = (
        table_keys.groupBy(*TABLE_COLUMNS)
        .agg(F.bit_or("kinds").alias("kinds"), *sums, F.count(F.lit(1)).alias("distinct_keys"), *span)
        .join(peaks, TABLE_COLUMNS)
        .withColumn("events_per_minute", F.round(F.col("events") / span_minutes, 1))
        .select(
            *TABLE_COLUMNS, _kinds_text(F.col("kinds")), *SUMS, "distinct_keys",
            "first_ts", "last_ts", "active_minutes", "events_per_minute", "peak_per_minute",
        )
        .orderBy(*TABLE_COLUMNS)
    )
    return Stats(tables=tables, keys=keys, notifications=notifications)
