"""The plain, hand-written PySpark jobs `swssd replay` is measured against (bench_replay_baselines.py).

What a fleet engineer would write instead of the tool, for swss.rec recordings laid out one
directory per host: read the text, one regular expression, DataFrame functions, default
settings apart from local mode with as many cores as the machine has. Each prints its answer
(or writes it, as the tool does) so that nothing is optimised away.

Run: .venv/bin/python bench/plain_spark_jobs.py {stats,state,history,diff,report} OUT INPUT_DIR... [--key K] [--dump F]
"""

from __future__ import annotations

import argparse
import json
import sys

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

#: timestamp | table, its separator (`:` APPL_DB, `|` CONFIG_DB), key | op [| fields]
ISO = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'"
LINE = r"^(\d{4}-\d{2}-\d{2}\.\d{2}:\d{2}:\d{2}\.\d{6})\|([^:|]+)([:|])(.*?)\|(SET|DEL)(?:\|(.*))?$"


def events(spark: SparkSession, inputs: list[str]) -> DataFrame:
    """One row per SET/DEL line: host (the directory), ts, table, key, op, fields text."""
    lines = spark.read.text([f"{d.rstrip('/')}/swss.rec*" for d in inputs])
    parsed = lines.select(
        F.regexp_extract(F.input_file_name(), r"/([^/]+)/[^/]+$", 1).alias("host"),
        F.regexp_extract("value", LINE, 1).alias("ts_text"),
        F.regexp_extract("value", LINE, 2).alias("table"),
        F.regexp_extract("value", LINE, 3).alias("sep"),
        F.regexp_extract("value", LINE, 4).alias("key"),
        F.regexp_extract("value", LINE, 5).alias("op"),
        F.regexp_extract("value", LINE, 6).alias("fields"),
    ).where(F.col("table") != "")
    return parsed.withColumn("ts", F.to_timestamp("ts_text", "yyyy-MM-dd.HH:mm:ss.SSSSSS")).drop("ts_text")


def stats(spark: SparkSession, inputs: list[str], out: str) -> None:
    """Per host and table: events, distinct keys, first and last."""
    rows = (
        events(spark, inputs)
        .groupBy("host", "table")
        .agg(F.count("*").alias("events"), F.countDistinct("key").alias("keys"),
             F.date_format(F.min("ts"), ISO).alias("first"), F.date_format(F.max("ts"), ISO).alias("last"))
        .orderBy("host", "table")
        .collect()
    )
    for r in rows:
        print(r["host"], r["table"], r["events"], r["keys"], r["first"], r["last"])


def _state(spark: SparkSession, inputs: list[str], where: str = "true") -> DataFrame:
    """Each entry's fields at the end: the fields SET after the entry's last DEL, each its last value."""
    ev = events(spark, inputs).where(where).withColumn("seq", F.monotonically_increasing_id())
    entry = ["host", "table", "key"]
    last_del = ev.where("op = 'DEL'").groupBy(*entry).agg(F.max(F.struct("ts", "seq")).alias("gone"))
    sets = (
        ev.where("op = 'SET'")
        .join(last_del, entry, "left")
        .where(F.col("gone").isNull() | (F.struct("ts", "seq") > F.col("gone")))
        .select(*entry, "ts", "seq", F.explode(F.split("fields", r"\|")).alias("fv"))
        .select(*entry, "ts", "seq", F.split("fv", ":", 2).alias("p"))
        .select(*entry, F.col("p")[0].alias("field"), F.col("p")[1].alias("value"), "ts", "seq")
    )
    latest = Window.partitionBy(*entry, "field").orderBy(F.desc("ts"), F.desc("seq"))
    return (
        sets.withColumn("n", F.row_number().over(latest)).where("n = 1")
        .groupBy(*entry).agg(F.map_from_entries(F.collect_list(F.struct("field", "value"))).alias("fields"))
    )


def state(spark: SparkSession, inputs: list[str], out: str) -> None:
    _state(spark, inputs).write.mode("overwrite").parquet(out)


def history(spark: SparkSession, inputs: list[str], out: str, key: str) -> None:
    rows = events(spark, inputs).where(F.col("key") == key).orderBy("ts").collect()
    for r in rows:
        print(r["host"], r["ts"], r["table"], r["key"], r["op"], r["fields"])


def diff(spark: SparkSession, inputs: list[str], out: str, dump: str) -> None:
    """The replayed APPL_DB state of one host against a `swssd dump` JSON file {"TABLE": {"key": {...}}}."""
    with open(dump, encoding="utf-8") as f:
        dumped = json.load(f)
    rows = [(table, key, fields) for table, entries in dumped.items() for key, fields in entries.items()]
    want = spark.createDataFrame(rows, "table string, key string, dumped map<string,string>")
    got = _state(spark, inputs, where="sep = ':'").drop("host")
    differ = got.join(want, ["table", "key"], "full_outer").where(
        F.col("fields").isNull() | F.col("dumped").isNull()
        | (F.to_json("fields") != F.to_json(F.map_from_entries(F.array_sort(F.map_entries("dumped"))))))
    n = differ.count()
    print(f"{n} differences")


def report(spark: SparkSession, inputs: list[str], out: str) -> None:
    """What the report shows: per-table figures, the most changed keys of each table and the
    changes per minute of each table."""
    ev = events(spark, inputs).cache()
    stats_rows = ev.groupBy("host", "table").agg(
        F.count("*").alias("events"), F.countDistinct("key").alias("keys"),
        F.min("ts").alias("first"), F.max("ts").alias("last")).collect()
    per_key = ev.groupBy("host", "table", "key").agg(F.count("*").alias("n"))
    top = per_key.withColumn("r", F.row_number().over(
        Window.partitionBy("host", "table").orderBy(F.desc("n")))).where("r <= 5").collect()
    minutes = ev.groupBy("host", "table", F.date_trunc("minute", "ts").alias("m")).count().collect()
    print(len(stats_rows), len(top), len(minutes))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("job", choices=["stats", "state", "history", "diff", "report"])
    ap.add_argument("out")
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--key")
    ap.add_argument("--dump")
    args = ap.parse_args()
    spark = (SparkSession.builder.master("local[*]").appName("plain-" + args.job)
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    extra = {"history": {"key": args.key}, "diff": {"dump": args.dump}}.get(args.job, {})
    globals()[args.job](spark, args.inputs, args.out, **extra)
    spark.stop()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
