"""stats: per host/table event counts, SET/DEL split, distinct keys, events per minute, flapping keys.

One aggregation over the events, per key and minute, is cached; every figure is derived from it,
so the input is read once.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .fold import KEY_COLUMNS

TABLE_COLUMNS = ["host", "db", "table"]


@dataclass
class Stats:
    tables: DataFrame
    """host, db, table, events, sets, dels, dead_letters, distinct_keys, first_ts, last_ts,
    active_minutes, events_per_minute (events over the span, at least one minute), peak_per_minute"""
    keys: DataFrame
    """host, db, table, key, events, sets, dels, dead_letters, first_ts, last_ts, active_minutes,
    the most changed first (a key that keeps being set and deleted is flapping)"""


def _count(cond: F.Column) -> F.Column:
    return F.sum(F.when(cond, 1).otherwise(0))


def compute(events: DataFrame) -> Stats:
    per_minute = (
        events.groupBy(*KEY_COLUMNS, F.date_trunc("minute", "ts").alias("minute"))
        .agg(
            F.count(F.lit(1)).alias("events"),
            _count(F.col("op") == "SET").alias("sets"),
            _count(F.col("op") == "DEL").alias("dels"),
            _count(F.col("dead_letter")).alias("dead_letters"),
            F.min("ts").alias("first_ts"),
            F.max("ts").alias("last_ts"),
        )
        .persist()
    )
    sums = [F.sum(c).alias(c) for c in ("events", "sets", "dels", "dead_letters")]
    span = [F.min("first_ts").alias("first_ts"), F.max("last_ts").alias("last_ts")]
    keys = (
        per_minute.groupBy(*KEY_COLUMNS)
        .agg(*sums, *span, F.count(F.lit(1)).alias("active_minutes"))
        .orderBy(F.desc("events"), F.desc("dels"), *KEY_COLUMNS)
    )
    minutes = per_minute.groupBy(*TABLE_COLUMNS, "minute").agg(F.sum("events").alias("n"))
    peaks = minutes.groupBy(*TABLE_COLUMNS).agg(
        F.max("n").alias("peak_per_minute"), F.count(F.lit(1)).alias("active_minutes")
    )
    span_minutes = F.greatest(
        F.lit(1.0),
        (F.unix_micros("last_ts") - F.unix_micros("first_ts")) / F.lit(60_000_000.0),
    )
    tables = (
        per_minute.groupBy(*TABLE_COLUMNS)
        .agg(*sums, F.count_distinct("key").alias("distinct_keys"), *span)
        .join(peaks, TABLE_COLUMNS)
        .withColumn("events_per_minute", F.round(F.col("events") / span_minutes, 1))
        .select(
            *TABLE_COLUMNS, "events", "sets", "dels", "dead_letters", "distinct_keys",
            "first_ts", "last_ts", "active_minutes", "events_per_minute", "peak_per_minute",
        )
        .orderBy(*TABLE_COLUMNS)
    )
    return Stats(tables=tables, keys=keys)
