"""stats: per host/table event counts, SET/DEL split, distinct keys, events per minute, flapping
keys, and notifications per channel and op.

Two aggregations, planned as one query: the events per key, notification op and block of
minutes (the minutes as bits) and per table, op and minute, then grouping sets over those rows:
per key (the keys table, and each table's distinct keys and sums), per table and minute (each
table's busiest minute) and per channel, op and minute (the notifications). That result is
cached; the keys table is written from it, and one small aggregation of it gives the per-table
and per-op figures, collected in one job. Each figure is a
plain sum, count, min, max or bitwise OR, or a difference of them: no distinct counts and no
sets, which cost Spark a slower aggregation, and few jobs, each of which costs a started JVM
planning, compiling and scheduling time (BENCHMARKS.md, "Replay against plain Spark").

Over text inputs the first aggregation reads every line, not only the events: the lines that are
not events of the command's filters are counted by kind on the way, which gives the summary of
what was read without the observation other commands make in the read (Stats.line_counts).

A notification's op is its own (any text), so it is counted apart from SET and DEL; its key is
the message's data, so notifications are ranked per channel and op rather than among the
flapping keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from ..capture.format import KINDS
from .fold import KEY_COLUMNS
from .sqltext import quote_name, sql_over

TABLE_COLUMNS = ["host", "db", "table"]
SUMS = ["events", "sets", "dels", "notifications", "dead_letters"]
TABLE_FIGURES = [*TABLE_COLUMNS, "kind", *SUMS, "distinct_keys", "first_ts", "last_ts", "active_minutes",
                 "events_per_minute", "peak_per_minute"]
"""The columns of `Stats.tables`: events_per_minute is the events over the span (at least one
minute)."""
KEY_FIGURES = [*TABLE_COLUMNS, "kind", "key", "events", "sets", "dels", "dead_letters", "first_ts", "last_ts",
               "active_minutes"]
"""The columns of `Stats.keys`: table entries (not notifications), the most changed first (a key that
keeps being set and deleted is flapping)."""
OP_FIGURES = [*TABLE_COLUMNS, "op", "events", "dead_letters", "first_ts", "last_ts", "active_minutes",
              "peak_per_minute"]
"""The columns of `Stats.notifications` (`table` is the channel), the most frequent first."""

#: the kinds a record may have, each a bit of a mask: a bitwise OR aggregates them in Spark's
#: plain hash aggregation (a set of strings would take its slower object aggregation)
KIND_BITS = sorted(KINDS)

#: keys sorted in one task at most (see Stats.keys_ordered)
ONE_TASK_SORT = 1_000_000
#: the files' Parquet options: no dictionaries. The keys file's keys and instants are nearly all
#: distinct, so each column's dictionary grew until Parquet gave it up; its write (one task, the
#: last of the command's at 2M events) took about 0.4 s less, the file is about a fifth larger.
#: The other two files (a few rows) take the same options: Parquet writes run side by side in one
#: session with different options took each other's (a fourth of the time, in Spark 4.3).
FILE_OPTIONS = {"parquet.enable.dictionary": "false"}
#: the grouping sets of the second aggregation (the `g` column)
PER_KEY, PER_OP_MINUTE, PER_MINUTE = 1, 2, 3
_MINUTE_US = 60_000_000
_EVENTS_VIEW = "swssd_replay_stats_events"
_KEYS = ", ".join(map(quote_name, KEY_COLUMNS))
_TABLE = ", ".join(map(quote_name, TABLE_COLUMNS))


def _kind_bit() -> str:
    """The bit of a record's kind; a record without one counts as `state`, the way it replays."""
    cases = " ".join(f"WHEN '{name}' THEN {1 << i}" for i, name in enumerate(KIND_BITS))
    return f"CASE coalesce(kind, 'state') {cases} ELSE 0 END"


def _kinds_text(mask: str) -> str:
    """The kinds of a mask, comma-separated in name order."""
    names = ", ".join(f"CASE WHEN (({mask}) & {1 << i}) != 0 THEN '{name}' END" for i, name in enumerate(KIND_BITS))
    return f"concat_ws(',', {names})"


def _selected_only(columns: list[str]) -> str:
    """`columns` of the selected events, null for the other lines (counted by kind alone; the
    time of a line rejected for it may be one Python cannot hold)."""
    return ", ".join(f"CASE WHEN sel THEN {quote_name(c)} END AS {quote_name(c)}" for c in columns)


def _state_only(aggregate: str, column: str) -> str:
    """`aggregate` of `column` over the rows of table entries (not notifications): null if none."""
    return f"{aggregate}(CASE WHEN nop IS NULL THEN {column} END)"


# A key's active minutes are the distinct minutes of its events. Counting them by grouping the
# events per key and minute costs a row per event and minute: in a recording that spans hours
# nearly every event is the only one of its key in its minute, so that aggregation reduced
# nothing (2M events, 1.9M rows), and every step after it was work per event. Instead a key's
# minutes are bits: the events are grouped per key and block of _BLOCK_MINUTES minutes, each
# minute a bit of _WORDS longs (bit_or, one of Spark's plain fixed-width aggregates), and a key's
# active minutes are the bits set over its blocks. A table's busiest minute still needs its
# events per minute: the same aggregation has a second grouping set, per table, op and minute.
#
# The minute (its index `mi`, and its start in UTC microseconds) and the block are numbers, by
# arithmetic on UTC microseconds (date_trunc goes through the session's time zone rules for every
# event); floor division keeps instants before 1970 in the right minute. A line that is not a
# selected event (a marker, a blank or rejected line, an event the filters leave out) keeps only
# its kind, `lk`: those rows count the lines read, by kind.
_WORDS = 2
_BLOCK_MINUTES = 64 * _WORDS
_MINUTE = f"(unix_micros(ts) - pmod(unix_micros(ts), {_MINUTE_US}))"
_MASKS = ", ".join(f"bit_or(CASE WHEN word = {i} THEN bit END) AS m{i}" for i in range(_WORDS))
_BITS = " + ".join(f"bit_count(coalesce(m{i}, 0L))" for i in range(_WORDS))
_EVENTS = f"""
SELECT *, mi * {_MINUTE_US} AS minute, (mi - pmod(mi, {_BLOCK_MINUTES})) div {_BLOCK_MINUTES} AS block,
  pmod(mi, {_BLOCK_MINUTES}) div 64 AS word, shiftleft(1L, CAST(pmod(mi, 64) AS INT)) AS bit
FROM (
  SELECT {_selected_only([*KEY_COLUMNS, "ts"])}, dead_letter, {_kind_bit()} AS kind_bit,
    CASE WHEN sel AND NOT is_notification AND op = 'SET' THEN 1 ELSE 0 END AS is_set,
    CASE WHEN sel AND is_notification THEN op END AS nop,
    CASE WHEN sel THEN {_MINUTE} div {_MINUTE_US} END AS mi,
    CASE WHEN NOT sel THEN line_kind END AS lk
  FROM (SELECT *, (kind <=> 'notification') AS is_notification FROM {{selected}})
  WHERE sel OR line_kind IS NOT NULL
)
"""
# The events per key, op and block (`per_key` 1) and per table, op and minute (0).
_PER_BLOCK_AND_MINUTE = f"""
SELECT {_KEYS}, nop, minute, lk, grouping(minute) AS per_key,
  bit_or(kind_bit) AS kinds, count(1) AS events, sum(is_set) AS sets,
  sum(CASE WHEN dead_letter THEN 1 ELSE 0 END) AS dead_letters, min(ts) AS first_ts, max(ts) AS last_ts, {_MASKS}
FROM ({_EVENTS})
GROUP BY GROUPING SETS (({_KEYS}, nop, block, lk), ({_TABLE}, nop, minute, lk))
"""

# A row of those is a notification's exactly when it has an op (`nop`): its events are
# notifications. A table entry's event is a SET or a DEL (inputs rejects any other op), so its
# DELs are what its SETs leave; SETs and DELs are never notifications', and the notification kind
# is the only one of their rows. So those figures, and a key's figures as a table entry, are
# derived rather than summed apart (each aggregate is work on every row).
_NOTIFICATIONS = "sum(CASE WHEN nop IS NOT NULL THEN events ELSE 0 END)"
_STATE_KINDS = ~(1 << KIND_BITS.index("notification"))

# Over those rows, three grouping sets at once (one pass, one shuffle): a row per key across its
# ops and blocks (with its table-entry figures apart), from the rows per key and block; per
# table and minute and per channel, op and minute, from the rows per minute (rows of table
# entries, whose op is null, are left out of the second). `per_key` is in every set, so the
# rows of the other kind fall in groups of their own, left out. Each set keeps the lines'
# kinds apart.
_GROUPED = f"""
SELECT {_KEYS}, nop, lk, g, kinds, events, sets, notifications, dels, dead_letters, first_ts, last_ts,
  s_dead_letters, s_first_ts, s_last_ts, s_minutes
FROM (
SELECT {_KEYS}, nop, lk, per_key,
  CASE WHEN grouping(minute) = 1 THEN {PER_KEY} WHEN grouping(nop) = 0 THEN {PER_OP_MINUTE} ELSE {PER_MINUTE} END AS g,
  bit_or(kinds) AS kinds, sum(events) AS events, sum(sets) AS sets, {_NOTIFICATIONS} AS notifications,
  sum(events) - sum(sets) - {_NOTIFICATIONS} AS dels, sum(dead_letters) AS dead_letters,
  min(first_ts) AS first_ts, max(last_ts) AS last_ts,
  {_state_only('sum', 'dead_letters')} AS s_dead_letters,
  {_state_only('min', 'first_ts')} AS s_first_ts, {_state_only('max', 'last_ts')} AS s_last_ts,
  coalesce({_state_only('sum', _BITS)}, 0L) AS s_minutes
FROM ({_PER_BLOCK_AND_MINUTE})
GROUP BY GROUPING SETS (({_KEYS}, lk, per_key), ({_TABLE}, nop, minute, lk, per_key), ({_TABLE}, minute, lk, per_key))
)
WHERE CASE WHEN g = {PER_KEY} THEN per_key = 1 ELSE per_key = 0 AND (g != {PER_OP_MINUTE} OR nop IS NOT NULL) END
"""

# The next two read the cached rows through the DataFrame API: a query of a temporary view over
# them would drop the cache with the view.
_KEYS_TABLE = [
    *map(quote_name, TABLE_COLUMNS), f"{_kinds_text(f'kinds & {_STATE_KINDS}')} AS kind", "`key`",
    "events - notifications AS events", "sets", "dels", "s_dead_letters AS dead_letters", "s_first_ts AS first_ts",
    "s_last_ts AS last_ts", "s_minutes AS active_minutes",
]

# A row per table (op null) and per channel and op: from the keys (the table's sums, kinds and
# distinct keys), its minutes (busiest minute, active minutes) and each op's minutes.
_OP = f"CASE WHEN g = {PER_OP_MINUTE} THEN nop END AS op"
_PER_TABLE_AND_OP = [
    f"bit_or(CASE WHEN g = {PER_KEY} THEN kinds END) AS kinds",
    f"sum(CASE WHEN g != {PER_MINUTE} THEN events END) AS events",
    f"sum(CASE WHEN g = {PER_KEY} THEN sets END) AS sets",
    f"sum(CASE WHEN g = {PER_KEY} THEN dels END) AS dels",
    f"sum(CASE WHEN g = {PER_KEY} THEN notifications END) AS notifications",
    f"sum(CASE WHEN g != {PER_MINUTE} THEN dead_letters END) AS dead_letters",
    f"count(CASE WHEN g = {PER_KEY} THEN 1 END) AS distinct_keys",
    f"min(CASE WHEN g != {PER_MINUTE} THEN first_ts END) AS first_ts",
    f"max(CASE WHEN g != {PER_MINUTE} THEN last_ts END) AS last_ts",
    f"count(CASE WHEN g != {PER_KEY} THEN 1 END) AS active_minutes",
    f"max(CASE WHEN g != {PER_KEY} THEN events END) AS peak_per_minute",
]
_PER_TABLE_AND_OP_COLUMNS = [
    *map(quote_name, TABLE_COLUMNS), "op", "lk", f"{_kinds_text('kinds')} AS kind", *SUMS, "distinct_keys", "first_ts",
    "last_ts", "active_minutes",
    f"round(events / greatest(1.0D, (unix_micros(last_ts) - unix_micros(first_ts)) / {_MINUTE_US}.0D), 1)"
    " AS events_per_minute",
    "peak_per_minute",
]


@dataclass
class Stats:
    grouped: DataFrame
    """the rows of the grouping sets, cached: every figure below is read from them (`figures`)"""
    keys: DataFrame
    """KEY_FIGURES, unordered (see `top_keys` and `keys_ordered`)"""
    per_table_and_op: DataFrame
    """TABLE_FIGURES, `op` and `lk`: a row per table (op null) and per channel and op (the rows of
    notifications: their `kind`, sums apart from events and dead letters, distinct keys and
    events per minute are not theirs), and per kind of line counted apart (`lk`, with its lines
    as `events`; see `line_counts`). A few rows, cached."""

    def figures(self) -> list[Row]:
        """The rows of per_table_and_op, collected: the first action, which reads the input and
        fills both caches (a count of the grouped rows first took two jobs of its own)."""
        return self.per_table_and_op.collect()

    @staticmethod
    def keys_at_most(rows: list[Row]) -> int:
        """How many keys there can be, from `figures`' rows: the tables' distinct keys."""
        return sum(r["distinct_keys"] or 0 for r in rows if r["op"] is None and r["lk"] is None)

    def keys_ordered(self, at_most: int) -> DataFrame:
        """The keys, the most changed first. Up to ONE_TASK_SORT of them (`at_most`: see
        keys_at_most) are sorted in one task: a sort across tasks first samples the keys in a job
        of its own."""
        if at_most <= ONE_TASK_SORT:
            return self.keys.coalesce(1).sortWithinPartitions(*_order(_KEY_ORDER))
        return self.keys.orderBy(*_order(_KEY_ORDER))

    def top_keys(self, n: int) -> list[Row]:
        return self.keys.orderBy(*_order(_KEY_ORDER)).limit(n).collect() if n > 0 else []

    def tables(self, rows: list[Row]) -> list[Row]:
        """The tables among `rows` (collected from per_table_and_op), by host, db and table."""
        return sorted((_only(r, TABLE_FIGURES) for r in rows if r["op"] is None and r["lk"] is None),
                      key=_table_order)

    def notifications(self, rows: list[Row]) -> list[Row]:
        """The channels' ops among `rows`, the most frequent first."""
        found = [_only(r, OP_FIGURES) for r in rows if r["op"] is not None]
        return sorted(found, key=lambda r: (-r["events"], *_table_order(r), r["op"]))

    def line_counts(self, rows: list[Row]) -> dict[str, int]:
        """The lines read, by kind (inputs.COUNTS), among `rows`: the selected events are the
        tables' events; the other lines were counted apart. Right when the source was the
        inputs' lines (`compute`)."""
        apart = {r["lk"]: r["events"] for r in rows if r["lk"] is not None}
        selected = sum(r["events"] for r in rows if r["op"] is None and r["lk"] is None)
        return {"lines": selected + sum(apart.values()), "events": selected + apart.get("event", 0),
                "markers": apart.get("marker", 0), "blank": apart.get("blank", 0), "rejects": apart.get("reject", 0)}

    def tables_frame(self) -> DataFrame:
        """The tables, as `tables` orders them, in one file (a few rows)."""
        return (self.per_table_and_op.where("op IS NULL AND lk IS NULL").select(*TABLE_FIGURES)
                .coalesce(1).sortWithinPartitions(*_order(TABLE_COLUMNS)))

    def notifications_frame(self) -> DataFrame:
        return (self.per_table_and_op.where("op IS NOT NULL").select(*OP_FIGURES)
                .coalesce(1).sortWithinPartitions(*_order(_OP_ORDER)))


#: the orders of the keys and of the notifications: columns, descending where starting with "-"
_KEY_ORDER = ["-events", "-dels", *KEY_COLUMNS]
_OP_ORDER = ["-events", *TABLE_COLUMNS, "op"]


def _order(names: list[str]) -> list[Column]:
    return [F.desc(n[1:]) if n.startswith("-") else F.asc(n) for n in names]


def _only(row: Row, columns: list[str]) -> Row:
    return Row(**{c: row[c] for c in columns})


def _table_order(row: Row) -> tuple[tuple[bool, str], ...]:
    """Spark's ascending order of strings (nulls first; UTF-8 bytes order as code points do)."""
    return tuple((row[c] is not None, row[c] or "") for c in TABLE_COLUMNS)


def command_conf(spark: SparkSession) -> dict[str, str]:
    """The SQL settings stats runs with. Its files' instants as Parquet's INT64 microseconds, not
    Spark's default INT96 (a Julian day and nanoseconds built per value): the keys file's write,
    one task on the command's path, took about 0.8 s less at 2M events (122,657 keys), and every
    reader reads both as timestamps.

    In local mode, one shuffle partition a core. The session's two a core (session.py) suit the
    commands that shuffle every event; here AQE coalesced the aggregations' four into three tasks
    on two cores, and a core waited for the third (2M events: about 2 s). Fewer partitions than
    that (a small input's one) stay as they are. And no adaptive execution: with as many
    partitions as cores there is nothing for it to coalesce, and each of its stages is a job of
    its own, re-planned in a JVM still cold (2M events: the aggregations after the read took
    2.4 s with it, 1.4 s without; BENCHMARKS.md, "Stats without adaptive execution")."""
    conf = {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}
    context = spark.sparkContext
    if (context.master or "").startswith("local"):
        conf["spark.sql.adaptive.enabled"] = "false"
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or 0)
        if partitions > context.defaultParallelism:
            conf["spark.sql.shuffle.partitions"] = str(context.defaultParallelism)
    return conf


def compute(source: DataFrame, conditions: Sequence[str] = ()) -> Stats:
    """The figures over the events of `source` that meet every one of `conditions` (SQL text): the
    grouped rows cached, the rest derived from them. `source` may be the inputs' lines (with
    `line_kind`, inputs.Inputs.lines): every line is then counted by kind on the way
    (`Stats.line_counts`), which spares the read an observation."""
    if "line_kind" not in source.columns:
        source = source.withColumn("line_kind", F.lit(None).cast("string"))
    condition = " AND ".join(f"({c})" for c in conditions) or "true"
    selected = (f"(SELECT *, CASE WHEN line_kind IS NULL OR line_kind = 'event' THEN coalesce({condition}, false) "
                f"ELSE false END AS sel FROM {_EVENTS_VIEW})")
    grouped = sql_over(source, _GROUPED.replace("{selected}", selected), _EVENTS_VIEW).persist()
    keys = grouped.where(f"g = {PER_KEY} AND s_minutes > 0 AND lk IS NULL").selectExpr(*_KEYS_TABLE)
    per_table_and_op = (
        grouped.groupBy(*TABLE_COLUMNS, F.expr(_OP), "lk")
        .agg(*(F.expr(a) for a in _PER_TABLE_AND_OP))
        .selectExpr(*_PER_TABLE_AND_OP_COLUMNS)
        .persist()
    )
    return Stats(grouped=grouped, keys=keys, per_table_and_op=per_table_and_op)
