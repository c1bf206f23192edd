"""The figures of `swssd replay report`, aggregated in Spark: only they reach Python (page.py draws them).

The text is parsed once: the first job fills a cache (memory, then disk) of the lines' parsed
columns the figures need, events and rejected lines together (parse_once), so that writing the
rejects is not a second parse; every figure is an aggregation over that cache. The per-key
figures are one hash aggregation after one shuffle by key (per_key): the counts as in `stats`,
and the flaps, which need order: each key's live records are collected, and each such short
list is sorted on its own, not every row of the capture.

Definitions (docs/replay.md's "The report" section says the same):

- An *event* is a record of the inputs that the filters keep, counted as `stats` counts it:
  dead-lettered records included (a task given up on is recorded when popped and again when
  dropped), notifications apart from SET and DEL (their op is their own).
- *Per table*: events, SETs, DELs, notifications, dead letters, distinct keys, per host, db and table.
- *Changes over time*: events per time bucket (one step for the whole report, the smallest of
  1 ms, 2 ms, 5 ms, ... 1 h, 1 day ... that gives at most MAX_BUCKETS buckets), per table and
  per host, split into SET, DEL and notification.
- *Churn* of a key: its events, as `stats` counts them per key (SET and DEL records of a table,
  dead letters included; notifications are messages, not keys).
- *Flaps* of a key = alternations + reversions, over its live records (not dead-lettered), in
  replay order (`ord`: time, then file order):
  - *alternations*: pairs of consecutive records of which one is a SET and the other a DEL
    (SET SET DEL SET: 2);
  - *reversions*: for each field, the values the key's SETs give it, in order, a value equal to
    the one before it dropped (a SET that leaves the field as it was changes nothing); each value
    equal to the one two before it counts one (up down up down: 2; 1 2 3 1: 0). A DEL does not
    end a field's sequence, and a field absent from a SET is not a value.
  A *flapping key* has at least one flap; the most flaps first.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Row, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from .fold import KEY_COLUMNS
from .inputs import Inputs
from .sqltext import quote_name

MAX_BUCKETS = 240
#: bucket steps in microseconds: the first that gives at most MAX_BUCKETS buckets is taken
STEPS_US = [
    n * unit
    for unit, ns in (
        (1_000, (1, 2, 5, 10, 20, 50, 100, 200, 500)),
        (1_000_000, (1, 2, 5, 10, 15, 30)),
        (60_000_000, (1, 2, 5, 10, 15, 30)),
        (3_600_000_000, (1, 2, 3, 6, 12)),
        (86_400_000_000, (1, 2, 7, 14, 30, 91, 182, 365)),
    )
    for n in ns
]
#: dead-lettered tasks the page lists (all of them are in `swssd replay history`)
DEAD_LETTERS = 200
#: tables (and hosts) charted apart, the busiest first; the others as one series
MAX_SERIES = 10
#: the busiest tables (by SET and DEL records, over every host) whose own most changed keys are
#: listed, and how many keys each: the most changed keys over all tables can all come from one
#: busy table and hide the busiest key of every other one
BUSIEST_TABLES = 10
KEYS_PER_TABLE = 5
OTHERS = {"table": "(other tables)", "host": "(other hosts)"}

_KEYS = [quote_name(c) for c in KEY_COLUMNS]
#: what the report reads of an event (the filters read host, db, table, key and ts)
EVENT_COLUMNS = [*_KEYS, "op", "fvs", "ts", "dead_letter", "dl_reason", "kind", "source", "ord"]
#: what it keeps of a parsed line: an event's columns, a rejected line's reason and text
_KEPT = ["line_kind", *EVENT_COLUMNS, "reason", "CASE WHEN line_kind = 'reject' THEN value END AS value"]
_BASE = [
    *_KEYS, "op", "dead_letter", "dl_reason", "ord", "fvs", "source", "ts",
    "coalesce(kind, 'state') AS kind",
    "(kind <=> 'notification') AS is_notification",
    "unix_micros(ts) AS us",
]


@dataclass(frozen=True)
class Event:
    """One record, as a history or the timeline around an instant shows it."""

    us: int
    host: str
    db: str
    table: str
    key: str
    op: str
    kind: str
    dead_letter: bool
    fvs: list[tuple[str, str]]
    #: why the daemon gave a dead-lettered task up (None for other events)
    reason: str | None = None


@dataclass(frozen=True)
class Series:
    """Events per bucket of one table or host (`name`) and one op class (SET, DEL, notification)."""

    name: str
    op: str
    counts: list[int]


@dataclass
class Timeline:
    """Buckets of `step_us` from `start_us` (aligned to the step), the same for every series."""

    start_us: int
    step_us: int
    buckets: int
    per_table: list[Series]
    per_host: list[Series]


@dataclass
class KeyFigures:
    """One key's churn and flaps (KEY_FIGURES), and its latest records."""

    host: str
    db: str
    table: str
    key: str
    events: int
    sets: int
    dels: int
    dead_letters: int
    alternations: int
    reversions: int
    flaps: int
    first_us: int
    last_us: int
    history: list[Event] = field(default_factory=list)
    """the latest HISTORY events of the key (live and dead-lettered), oldest first"""


@dataclass
class TableKeys:
    """One table (over every host) and its most changed keys."""

    db: str
    table: str
    events: int
    """SET and DEL records, as the keys' events count them"""
    keys: list[KeyFigures]


@dataclass
class Around:
    """The window around an instant: `total` events in it, the first of them listed."""

    at_us: int
    window_us: int
    total: int
    events: list[Event]
    """the first `limit` events in [at - window, at + window], in replay order"""


@dataclass
class Overview:
    """Everything the page shows: small, plain Python."""

    counts: dict[str, int]
    rejects_path: str | None
    reject_reasons: list[tuple[str, int]]
    sources: list[tuple[str, int]]
    events: int
    first_us: int | None
    last_us: int | None
    hosts: list[str]
    tables: list[Row]
    """per host, db and table: TABLE_FIGURES"""
    timeline: Timeline | None
    keys_total: int
    flapping_total: int
    top_keys: list[KeyFigures]
    flapping: list[KeyFigures]
    around: Around | None
    per_table: list[TableKeys] = field(default_factory=list)
    """the busiest tables' own most changed keys, the busiest table first"""
    dead_letters: list[Event] = field(default_factory=list)
    """the first DEAD_LETTERS dead-lettered tasks, in replay order, with their reasons"""
    dead_letters_total: int = 0


TABLE_FIGURES = ["host", "db", "table", "events", "sets", "dels", "notifications", "dead_letters",
                 "distinct_keys", "first_us", "last_us"]
KEY_FIGURES = [*KEY_COLUMNS, "events", "sets", "dels", "dead_letters", "alternations", "reversions", "flaps",
               "first_us", "last_us"]


def parse_once(inputs: Inputs) -> tuple[Inputs, DataFrame]:
    """The inputs with their text lines parsed into a cache (memory, then disk) of the events'
    EVENT_COLUMNS and the rejected lines, and the events (with those of stored inputs), unfiltered.

    The rejects written from the returned Inputs come from that cache, not from a second parse
    of the text (the cache is filled by the first job; release it with `release`)."""
    stored = [s.events.selectExpr(*EVENT_COLUMNS) for s in inputs.stored]
    if inputs.lines is None:
        parts = stored
    else:
        kept = inputs.lines.where("line_kind IN ('event', 'reject')").selectExpr(*_KEPT)
        kept = kept.persist(StorageLevel.MEMORY_AND_DISK)
        inputs = replace(inputs, lines=kept)
        parts = [kept.where("line_kind = 'event'").selectExpr(*EVENT_COLUMNS), *stored]
    events = parts[0]
    for part in parts[1:]:
        events = events.unionByName(part)
    return inputs, events


def fill(inputs: Inputs) -> None:
    """Parse the text into parse_once's cache, in a job of its own: scans of a cache not yet
    filled, started together in one job, wait on the blocks another is parsing, holding task slots."""
    if inputs.lines is not None:
        inputs.lines.count()


def release(inputs: Inputs) -> None:
    """Drop parse_once's cache."""
    if inputs.lines is not None:
        inputs.lines.unpersist()


def base_columns(events: DataFrame) -> DataFrame:
    """The columns the figures read, computed from the (cached) events."""
    return events.selectExpr(*_BASE)


def _count(cond: str) -> Column:
    return F.expr(f"sum(CASE WHEN {cond} THEN 1 ELSE 0 END)")


def bucket_step(first_us: int, last_us: int, max_buckets: int = MAX_BUCKETS) -> int:
    """The smallest step of STEPS_US that covers the span in at most `max_buckets` buckets."""
    for step in STEPS_US:
        if (last_us // step) - (first_us // step) + 1 <= max_buckets:
            return step
    return -(-(last_us - first_us + 1) // max_buckets)


def timeline(base: DataFrame, first_us: int, last_us: int, tables: list[Row]) -> tuple[Timeline, list[tuple[str, int]]]:
    """Events per bucket, per table and per host, split by op class (the MAX_SERIES busiest tables
    and hosts apart, the others summed as one); and events per input file. One job: the events
    counted per host, table, op class, bucket and file, those counts summed over three grouping sets."""
    step = bucket_step(first_us, last_us)
    start = first_us - first_us % step
    buckets = (last_us - start) // step + 1
    labels = _table_labels(tables)
    busiest: dict[str, set[str]] = {"table": set(), "host": set()}
    for what, name_of in (("table", lambda r: labels[(r["db"], r["table"])]), ("host", lambda r: r["host"])):
        totals: dict[str, int] = {}
        for r in tables:
            totals[name_of(r)] = totals.get(name_of(r), 0) + r["events"]
        busiest[what] = set(sorted(totals, key=lambda n: (-totals[n], n))[:MAX_SERIES])
    bucketed = base.selectExpr(
        "host", "db", "`table`",
        "source", "CASE WHEN is_notification THEN 'notification' ELSE op END AS op_class",
        f"CAST((us - {start}) DIV {step} AS INT) AS bucket",
    )
    # counted once per host, table, op class, bucket and file (a few rows a bucket), then per grouping
    # set: the grouping sets' Expand copies those rows three times, not every event
    counted = bucketed.groupBy("host", "db", "table", "op_class", "bucket", "source").agg(F.count(F.lit(1)).alias("n"))
    grouped = base.sparkSession.sql(
        "SELECT host, db, `table`, op_class, bucket, source, sum(n) AS n, grouping(host) AS by_table,"
        " grouping(source) AS by_time FROM {counted}"
        " GROUP BY GROUPING SETS ((db, `table`, op_class, bucket), (host, op_class, bucket), (source))",
        counted=counted,
    ).collect()
    sources = sorted((r["source"], int(r["n"])) for r in grouped if not r["by_time"])
    series: dict[str, list[Series]] = {}
    for what, by_table in (("table", 1), ("host", 0)):
        by_name: dict[tuple[str, str], list[int]] = {}
        for r in grouped:
            if not r["by_time"] or r["by_table"] != by_table:
                continue
            name = labels[(r["db"], r["table"])] if what == "table" else r["host"]
            if name not in busiest[what]:
                name = OTHERS[what]
            counts = by_name.setdefault((name, r["op_class"]), [0] * buckets)
            counts[r["bucket"]] += r["n"]
        order = {"SET": 0, "DEL": 1, "notification": 2}
        series[what] = [
            Series(name, op, counts)
            for (name, op), counts in sorted(
                by_name.items(), key=lambda kv: (kv[0][0] == OTHERS[what], kv[0][0], order.get(kv[0][1], 3)))
        ]
    return Timeline(start, step, buckets, series["table"], series["host"]), sources


def _table_labels(tables: list[Row]) -> dict[tuple[str, str], str]:
    """A table's name, with its database where two databases hold a table of that name."""
    dbs: dict[str, set[str]] = {}
    for r in tables:
        dbs.setdefault(r["table"], set()).add(r["db"])
    return {(r["db"], r["table"]): r["table"] if len(dbs[r["table"]]) == 1 else f"{r['db']} {r['table']}"
            for r in tables}


_IS_RECORD = "NOT is_notification"
_IS_LIVE = f"{_IS_RECORD} AND NOT dead_letter"
KEY_PARTITIONS_PER_SHUFFLE_PARTITION = 4

# A live record, for the flaps: its place in replay order (`ord` flattened), its op (0 SET, 1 DEL)
# and, for a SET, its fields and their values as 64-bit hashes; null for any other event.
_LIVE_RECORD = (
    f"CASE WHEN {_IS_LIVE} THEN named_struct('us', us, 'rotation', ord.rotation, 'file', ord.file,"
    " 'block', ord.block, 'line', ord.line, 'op', CASE WHEN op = 'DEL' THEN 1L ELSE 0L END,"
    " 'fields', CASE WHEN op = 'SET' THEN transform(fvs, p -> xxhash64(p[0])) ELSE CAST(array() AS ARRAY<BIGINT>) END,"
    " 'values', CASE WHEN op = 'SET' THEN transform(fvs, p -> xxhash64(p[1])) ELSE CAST(array() AS ARRAY<BIGINT>) END)"
    " END"
)
# A key's live records, in replay order once sorted (a struct sorts by its members in turn; the
# order's five are unique per record, so the arrays after them are never compared).
_RECORDS = "sort_array(collect_list(record))"
# Every field value of the key's SETs, sorted by field, then record (its place in the sorted
# list), then the field's place in the record: each field's values in replay order, one run a field.
_FIELD_VALUES = (
    "sort_array(flatten(transform(records, (r, i) -> transform(arrays_zip(r.fields, r.`values`),"
    " (z, j) -> named_struct('field', z.fields, 'record', i, 'pos', j, 'value', z.`values`)))))"
)
# Alternations: the changes of the ops' sequence. Reversions: over each field's run, the changes
# (a value unlike the one before it) back to the value before the last change.
_ALTERNATIONS = (
    "aggregate(records.op, named_struct('last', CAST(NULL AS BIGINT), 'n', 0),"
    " (acc, x) -> named_struct('last', x, 'n', acc.n + IF(acc.last IS NOT NULL AND acc.last != x, 1, 0)),"
    " acc -> acc.n)"
)
_REVERSIONS = (
    "aggregate(field_values, named_struct('field', CAST(NULL AS BIGINT), 'last', CAST(NULL AS BIGINT),"
    " 'before', CAST(NULL AS BIGINT), 'n', 0),"
    " (acc, x) -> CASE WHEN NOT (acc.field <=> x.field)"
    " THEN named_struct('field', x.field, 'last', x.value, 'before', CAST(NULL AS BIGINT), 'n', acc.n)"
    " WHEN x.value = acc.last THEN acc"
    " ELSE named_struct('field', x.field, 'last', x.value, 'before', acc.last,"
    " 'n', acc.n + IF(x.value = acc.before, 1, 0))"
    " END, acc -> acc.n)"
)


def per_key(base: DataFrame) -> DataFrame:
    """Per key (notifications' keys too): its events as `stats` counts them, the notifications'
    counts, and its flaps (module docstring; 0 for a key without a live record). One shuffle of
    a narrow row an event, by key, then one hash aggregation (no sort of the rows).

    The flaps need order: each key's live records are collected in the hash map and sorted
    there, a list of some hundred mostly ordered records (the shuffle keeps each file's order);
    its ops and its fields' values are then folded in order by higher-order functions. A sort of
    every row by key, field and the six columns of the order, as a window needs, took longer
    than the rest of the report; a list a key and field, longer than the rest of the per-key job
    (one list element an op or field value: three times as many); counts and lists in two
    shuffles joined after, 2 s more than this one (BENCHMARKS.md). Fields and values are
    compared by their 64-bit hashes (xxhash64); two different ones taken for one have a chance
    of about 2^-64."""
    rows = base.selectExpr(
        "xxhash64(host, db, `table`, `key`) AS key_id", *_KEYS, "is_notification", "dead_letter", "op", "us",
        f"{_LIVE_RECORD} AS record",
    )
    # By key (the grouping's other columns follow from it, so there is no other shuffle), in
    # more partitions than the session's few, so that each task's hash map fits beside the cache.
    partitions = KEY_PARTITIONS_PER_SHUFFLE_PARTITION * int(base.sparkSession.conf.get(
        "spark.sql.shuffle.partitions") or 1)
    grouped = rows.repartition(partitions, "key_id").groupBy("key_id", *KEY_COLUMNS).agg(
        _count(_IS_RECORD).alias("events"),
        _count(f"{_IS_RECORD} AND op = 'SET'").alias("sets"),
        _count(f"{_IS_RECORD} AND op = 'DEL'").alias("dels"),
        _count(f"{_IS_RECORD} AND dead_letter").alias("dead_letters"),
        F.expr(f"min(CASE WHEN {_IS_RECORD} THEN us END)").alias("first_us"),
        F.expr(f"max(CASE WHEN {_IS_RECORD} THEN us END)").alias("last_us"),
        _count("is_notification").alias("notifications"),
        _count("is_notification AND dead_letter").alias("notification_dead_letters"),
        F.min("us").alias("any_first_us"),
        F.max("us").alias("any_last_us"),
        F.expr(_RECORDS).alias("records"),
    )
    return (
        grouped.selectExpr("*", f"{_ALTERNATIONS} AS alternations", f"{_FIELD_VALUES} AS field_values")
        .selectExpr("*", f"{_REVERSIONS} AS reversions")
        .drop("key_id", "records", "field_values")
        .withColumn("flaps", F.col("alternations") + F.col("reversions"))
    )


def key_figures(keyed: DataFrame) -> DataFrame:
    """Keys of tables (per_key's rows with a record), KEY_FIGURES."""
    return keyed.where("events > 0").select(*KEY_FIGURES)


def table_figures(keyed: DataFrame) -> DataFrame:
    """Per host, db and table, as `stats` counts them, from per_key's rows."""
    return (
        keyed.groupBy("host", "db", "table")
        .agg(
            F.expr("sum(events + notifications)").alias("events"),
            F.sum("sets").alias("sets"),
            F.sum("dels").alias("dels"),
            F.sum("notifications").alias("notifications"),
            F.expr("sum(dead_letters + notification_dead_letters)").alias("dead_letters"),
            F.count(F.lit(1)).alias("distinct_keys"),
            F.min("any_first_us").alias("first_us"),
            F.max("any_last_us").alias("last_us"),
        )
        .select(*TABLE_FIGURES)
    )


def top(keys: DataFrame, n: int) -> tuple[list[KeyFigures], list[KeyFigures], int, int]:
    """The `n` most changed keys, the `n` keys that flap most, how many keys, how many flap."""
    order = [*KEY_COLUMNS]
    most = keys.orderBy(F.desc("events"), F.desc("dels"), *order).limit(n).collect()
    flapping = keys.where("flaps > 0").orderBy(F.desc("flaps"), F.desc("events"), *order).limit(n).collect()
    totals = keys.agg(F.count(F.lit(1)).alias("keys"), _count("flaps > 0").alias("flapping")).first()
    assert totals is not None
    return ([_key(r) for r in most], [_key(r) for r in flapping], int(totals["keys"]),
            int(totals["flapping"] or 0))


def top_per_table(keys: DataFrame, tables: list[Row], tables_n: int, n: int) -> list[TableKeys]:
    """The `n` most changed keys (ordered as `top` orders them) of each of the `tables_n` busiest
    tables, a table being a database's table over every host; one job."""
    records: dict[tuple[str, str], int] = {}
    for r in tables:
        records[(r["db"], r["table"])] = records.get((r["db"], r["table"]), 0) + r["events"] - r["notifications"]
    busiest = sorted((t for t, count in records.items() if count > 0), key=lambda t: (-records[t], t))[:tables_n]
    if not busiest or n <= 0:
        return []
    wanted = F.concat_ws("\u0000", "db", "table").isin(["\u0000".join(t) for t in busiest])
    order = Window.partitionBy("db", "table").orderBy(F.desc("events"), F.desc("dels"), *KEY_COLUMNS)
    rows = keys.where(wanted).withColumn("rank", F.row_number().over(order)).where(F.col("rank") <= n).collect()
    found: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        found.setdefault((r["db"], r["table"]), []).append(r)
    return [TableKeys(db, table, records[(db, table)],
                      [_key(r) for r in sorted(found.get((db, table), []), key=lambda r: r["rank"])])
            for db, table in busiest]


def _key(r: Row) -> KeyFigures:
    """A row of KEY_FIGURES, its history to be added (add_histories)."""
    return KeyFigures(**{name: r[name] for name in KEY_FIGURES})


_KEY_SCHEMA = StructType([StructField(c, StringType(), False) for c in KEY_COLUMNS])


def add_histories(base: DataFrame, keys: list[KeyFigures], n: int) -> None:
    """Each key's latest `n` records (live and dead-lettered), oldest first, one job for all."""
    wanted = {(k.host, k.db, k.table, k.key) for k in keys}
    if not wanted or n <= 0:
        return
    chosen = base.sparkSession.createDataFrame(sorted(wanted), _KEY_SCHEMA)
    latest = Window.partitionBy(*KEY_COLUMNS).orderBy(F.desc("ord"))
    rows = (
        base.where("NOT is_notification")
        .join(F.broadcast(chosen), KEY_COLUMNS, "left_semi")
        .withColumn("nth", F.row_number().over(latest))
        .where(F.col("nth") <= n)
        .orderBy(*KEY_COLUMNS, "ord")
        .collect()
    )
    found: dict[tuple[str, str, str, str], list[Event]] = {}
    for r in rows:
        found.setdefault((r["host"], r["db"], r["table"], r["key"]), []).append(event(r))
    for k in keys:
        k.history = found.get((k.host, k.db, k.table, k.key), [])


def event(r: Row) -> Event:
    """A row of the cached events as the page lists it."""
    return Event(us=r["us"], host=r["host"], db=r["db"], table=r["table"], key=r["key"], op=r["op"],
                 kind=r["kind"], dead_letter=bool(r["dead_letter"]), fvs=[(p[0], p[1]) for p in r["fvs"] or ()],
                 reason=r["dl_reason"])


def dead_letters(base: DataFrame, limit: int) -> tuple[list[Event], int]:
    """The first `limit` dead-lettered tasks in replay order, and how many there are."""
    dead = base.where("dead_letter")
    rows = dead.orderBy("ord").limit(limit).collect()
    return [event(r) for r in rows], len(rows) if len(rows) < limit else dead.count()


def around(base: DataFrame, at_us: int, window_us: int, limit: int) -> Around:
    """Every event in [at - window, at + window] on every host, in replay order (the first `limit`)."""
    # on `ts`, not `us`: the cache's batches whose span is outside the window are skipped unread
    inside = base.where(f"ts BETWEEN timestamp_micros({at_us - window_us}) AND timestamp_micros({at_us + window_us})")
    rows = inside.orderBy("ord").limit(limit).collect()
    total = len(rows) if len(rows) < limit else inside.count()
    return Around(at_us, window_us, total, [event(r) for r in rows])
