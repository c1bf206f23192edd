"""diff: the replayed state of one host and database against a dump of the live tables.

Dump format (what `swssd dump` prints; one database per file), a JSON object:

    {"<table>": {"<key>": {"<field>": "<value>", ...}, ...}, ...}

for example {"PORT_TABLE": {"Ethernet0": {"mtu": "9100", "admin_status": "up"}}}. Keys are the
entry keys without the table name and separator; every value is a string. A table present with
`{}` is an empty live table. Every table of the replayed state is compared: a table the dump
lacks counts as empty live (Redis keeps no empty hash, so `swssd dump` cannot print a wiped table),
and each of its entries is reported missing. `--table` limits the comparison to the tables named
there, on both sides.

Each difference is one row (table, key, kind, field, replay_value, live_value), kind being
`missing_entry` (in the replayed state, not live), `extra_entry` (live, not in the state),
`missing_field`, `extra_field` or `changed`; entry kinds give one row per field of the entry.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import MapType, StringType

DUMP_SCHEMA = MapType(StringType(), MapType(StringType(), MapType(StringType(), StringType())))
DIFF_COLUMNS = ["table", "key", "kind", "field", "replay_value", "live_value"]


class DumpFormatError(ValueError):
    pass


def read_dump(spark: SparkSession, path: str) -> DataFrame:
    """table, key, fields from a dump file, read by Spark (any path Spark reads)."""
    raw = spark.read.text(path, wholetext=True).select(F.from_json("value", DUMP_SCHEMA).alias("d"))
    if raw.where(F.col("d").isNull()).limit(1).count():
        raise DumpFormatError(
            f"{path}: not a dump; expected {{\"<table>\": {{\"<key>\": {{\"<field>\": \"<value>\"}}}}}}"
        )
    tables = raw.select(F.explode("d").alias("table", "entries"))
    return tables.select(
        "table", F.explode_outer("entries").alias("key", "fields")
    )


def diff(state: DataFrame, dump: DataFrame) -> DataFrame:
    """Differences between `state` (table, key, fields) and the dump, field by field."""
    live = dump.where(F.col("key").isNotNull())
    joined = state.select("table", "key", F.col("fields").alias("rf")).join(
        live.select("table", "key", F.col("fields").alias("lf")), ["table", "key"], "full_outer"
    )
    names = F.array_union(
        F.coalesce(F.map_keys("rf"), F.array().cast("array<string>")),
        F.coalesce(F.map_keys("lf"), F.array().cast("array<string>")),
    )
    rows = joined.select("table", "key", "rf", "lf", F.explode(names).alias("field")).select(
        "table", "key", "rf", "lf", "field",
        F.try_element_at("rf", F.col("field")).alias("replay_value"),
        F.try_element_at("lf", F.col("field")).alias("live_value"),
    )
    kind = (
        F.when(F.col("lf").isNull(), "missing_entry")
        .when(F.col("rf").isNull(), "extra_entry")
        .when(F.col("live_value").isNull(), "missing_field")
        .when(F.col("replay_value").isNull(), "extra_field")
        .when(F.col("replay_value") != F.col("live_value"), "changed")
    )
    return rows.select(*DIFF_COLUMNS[:2], kind.alias("kind"), *DIFF_COLUMNS[3:]).where(
        F.col("kind").isNotNull()
    )
