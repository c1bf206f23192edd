"""The sub-commands: each reads the inputs, runs DataFrame jobs, writes Parquet, prints a summary.

Only small results reach the driver: summaries, the first rows for the terminal, and for
`restore` the entries to write into Redis.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from . import diff as diff_mod
from . import segment as segment_mod
from . import stats as stats_mod
from .fold import event_conditions, fold_state, matches, select_events
from .inputs import InputOptions, Inputs, load
from .output import write_replacing
from .rejects import bound_note, bounded
from .report import input_summary, text_table
from .session import sql_conf
from .timeparse import parse_instant


class UsageError(Exception):
    """A problem with the command line or the inputs, reported without a traceback."""


def out_path(args: argparse.Namespace, name: str) -> str:
    return f"{args.output.rstrip('/')}/{name}"


def _instant(args: argparse.Namespace, name: str) -> int | None:
    text = getattr(args, name, None)
    return parse_instant(text, args.timezone) if text else None


def input_options(args: argparse.Namespace) -> InputOptions:
    return InputOptions(paths=args.inputs, host=args.host, host_pattern=args.host_pattern,
                        timezone=args.timezone, rec_db=args.rec_db,
                        unreadable=tuple(sorted(getattr(args, "unreadable", {}).items())),
                        max_line_bytes=args.max_line_bytes, long_lines=getattr(args, "long_lines", None),
                        line_kinds=getattr(args, "line_kinds", None),
                        cuts=tuple(sorted((path, cut.reason()) for path, cut in getattr(args, "cuts", {}).items())),
                        replaced=tuple(sorted((cut.copy, path) for path, cut in getattr(args, "cuts", {}).items())))


def given_inputs(args: argparse.Namespace) -> list[str]:
    """The input files read, a cut `.gz` file named as itself rather than its readable copy."""
    originals = {cut.copy: path for path, cut in getattr(args, "cuts", {}).items()}
    return [originals.get(p, p) for p in args.inputs]


def _load(spark: SparkSession, args: argparse.Namespace, observe: bool = True) -> Inputs:
    """The text inputs and the segments among the inputs (cli.main opened and checked them)."""
    segments = getattr(args, "segments", [])
    return load(spark, input_options(args), [segment_mod.stored(spark, s) for s in segments], observe)


def _events(inputs: Inputs, args: argparse.Namespace, dbs: list[str] | None) -> DataFrame:
    return _filtered(inputs.events, args, dbs)


def _filtered(events: DataFrame, args: argparse.Namespace, dbs: list[str] | None) -> DataFrame:
    return select_events(events, event_conditions(events.sparkSession, **_filters(args, dbs)))


def _filters(args: argparse.Namespace, dbs: list[str] | None) -> dict[str, Any]:
    """event_conditions' filters, from the command's options."""
    return {"as_of_us": _instant(args, "as_of"), "since_us": _instant(args, "since"), "hosts": args.only_host,
            "dbs": dbs, "tables": args.table, "keys": args.key}


def _report_inputs(inputs: Inputs, args: argparse.Namespace, counted: dict[str, int] | None = None) -> dict[str, int]:
    """Print what was read; write rejected lines (a second pass, only when there are any).
    `counted`: the lines' counts of a command that counted them itself (Inputs.counts)."""
    counts = inputs.counts(counted)
    _note_long_lines(inputs)
    path = None
    note = ""
    if counts.get("rejects"):
        path = out_path(args, "rejects")
        rejects, written = bounded(inputs.rejects)
        rejects.write.mode("overwrite").json(path)
        note = bound_note(counts["rejects"], int(written.get.get("written") or 0))
    _print_counts(counts, path, note)
    return counts


#: notes printed for lines over the limit (all of them are in the rejects)
_LONG_LINE_NOTES = 10


def _note_long_lines(inputs: Inputs) -> None:
    found = inputs.long_lines()
    for x in found[:_LONG_LINE_NOTES]:
        print(f"swssd replay: note: {x.path}: {x.reason(inputs.max_line_bytes)}; counted as a rejected line",
              file=sys.stderr)
    if len(found) > _LONG_LINE_NOTES:
        print(f"swssd replay: note: {len(found) - _LONG_LINE_NOTES} more line(s) over the limit: see the rejects",
              file=sys.stderr)


def _print_counts(counts: dict[str, int], rejects_path: str | None, note: str = "") -> None:
    print(input_summary(counts, rejects_path) + note)
    if not counts.get("lines"):
        print("swssd replay: warning: the inputs hold no lines (empty files or directories)", file=sys.stderr)


def _write(df: DataFrame, path: str) -> DataFrame:
    """Write `df` as Parquet and read it back with the schema it was written with: Spark would
    otherwise run a job to read the schema from the files (one of a small replay's few jobs)."""
    df.write.mode("overwrite").parquet(path)
    return df.sparkSession.read.schema(df.schema).parquet(path)


def _when(args: argparse.Namespace) -> str:
    return f"as of {args.as_of}" if args.as_of else "at the end of the input"


def _single_host(state: DataFrame) -> str | None:
    hosts = sorted(r["host"] for r in state.select("host").distinct().collect())
    if len(hosts) > 1:
        raise UsageError(
            f"the inputs hold several hosts ({', '.join(hosts)}): choose one with --only-host"
        )
    return hosts[0] if hosts else None


# -- state --------------------------------------------------------------------------------


def run_state(spark: SparkSession, args: argparse.Namespace) -> int:
    inputs = _load(spark, args)
    path = out_path(args, "state")
    written = _write(fold_state(_events(inputs, args, args.db)), path)
    _report_inputs(inputs, args)
    per_table = (
        written.groupBy("host", "db", "table").agg(F.count(F.lit(1)).alias("entries"))
        .orderBy("host", "db", "table").collect()
    )
    total = sum(r["entries"] for r in per_table)
    print(f"state {_when(args)}: {total} entries in {len(per_table)} tables -> {path}")
    if per_table:
        print(text_table(["host", "db", "table", "entries"], per_table))
    if args.show:
        rows = written.orderBy("host", "db", "table", "key").limit(args.show).collect()
        print(text_table(["host", "db", "table", "key", "fields"], rows, max_width=100))
    return 0


# -- history ------------------------------------------------------------------------------

HISTORY_COLUMNS = ["ts", "host", "db", "table", "key", "op", "fvs", "seq", "dead_letter", "reason",
                   "kind", "source"]


def _fields_text(fvs: list) -> str:  # type: ignore[type-arg]
    return " ".join(f"{field}={value}" for field, value in fvs or ())


def _op_text(op: str, kind: str | None, dead_letter: bool, reason: str | None = None) -> str:
    """The op, marked with a recorded kind other than state (a subscriber SET is a whole entry,
    a notification's op is its own) and when dead-lettered, with the reason the daemon gave up."""
    dead = (" (dead letter)" + (f" reason: {reason}" if reason else "")) if dead_letter else ""
    return op + (f" ({kind})" if kind and kind != "state" else "") + dead


def run_history(spark: SparkSession, args: argparse.Namespace) -> int:
    inputs = _load(spark, args)
    # parsed once: the sort's sampling, its write and the first rows printed read the same events
    events = _events(inputs, args, args.db).withColumnRenamed("dl_reason", "reason").persist()
    path = out_path(args, "history")
    written = _write(events.orderBy("ord").select(*HISTORY_COLUMNS), path)
    _report_inputs(inputs, args)
    total = written.count()
    print(f"history: {total} events -> {path}")
    if args.limit:
        first = events.orderBy("ord").select(*HISTORY_COLUMNS).limit(args.limit).collect()
        rows = [
            (r["ts"], r["host"], r["db"], r["table"], r["key"],
             _op_text(r["op"], r["kind"], r["dead_letter"], r["reason"]), _fields_text(r["fvs"]))
            for r in first
        ]
        # the db too: CONFIG_DB's PORT and APPL_DB's PORT_TABLE (or one table name in two
        # databases) mix in one history
        print(text_table(["ts", "host", "db", "table", "key", "op", "fields"], rows, max_width=80))
        if total > len(rows):
            print(f"... {total - len(rows)} more in {path}")
    return 0


# -- stats --------------------------------------------------------------------------------


def run_stats(spark: SparkSession, args: argparse.Namespace) -> int:
    with sql_conf(spark, stats_mod.command_conf(spark), dict(getattr(args, "conf", []))):
        return _stats(spark, args)


def _stats(spark: SparkSession, args: argparse.Namespace) -> int:
    # Text inputs alone: stats counts their lines by kind in its own aggregation, with no
    # observation in the read (Inputs.counts). Segments' events come with counts of their own.
    segments = bool(getattr(args, "segments", []))
    inputs = _load(spark, args, observe=segments)
    source = inputs.events if segments or inputs.lines is None else inputs.lines
    st = stats_mod.compute(source, event_conditions(spark, **_filters(args, args.db)))
    tables_path, keys_path = out_path(args, "stats/tables"), out_path(args, "stats/keys")
    notifications_path = out_path(args, "stats/notifications")
    # The first action reads the input, caches what every other reads and collects the figures
    # of tables and ops. The rest (the keys printed, the three files) are small jobs over those
    # caches, each mostly waiting on the driver and on a JVM's first run of its code: run side by
    # side, they take about the time of the longest (the input is read once, so the counts
    # observed while it is read stay right). The longest is the keys file (one task: its sort and
    # write), so it is planned alone and the others follow once its job started: planned beside
    # the others (four then), it started 2.2 s after the cache was filled rather than 1.2 s (2M
    # events).
    figures = st.figures()
    with ThreadPoolExecutor(4, thread_name_prefix="swssd-replay-stats") as pool:
        group = _keys_group()
        keys = st.keys_ordered(st.keys_at_most(figures))
        writes = [pool.submit(_in_group, spark, group, _parquet(keys), keys_path)]
        _wait_for_group(spark, group, writes[0])
        top = pool.submit(st.top_keys, args.top)
        writes += [pool.submit(_parquet(df), path)
                   for df, path in ((st.tables_frame(), tables_path), (st.notifications_frame(), notifications_path))]
        for write in writes:
            write.result()
        top_keys = top.result()
    tables, notifications = st.tables(figures), st.notifications(figures)
    _report_inputs(inputs, args, None if segments else st.line_counts(figures))
    print(f"per table -> {tables_path}")
    print(text_table(
        ["host", "db", "table", "kind", "events", "SET", "DEL", "notif", "dead", "keys", "ev/min",
         "peak/min", "first", "last"],
        [(r["host"], r["db"], r["table"], r["kind"], r["events"], r["sets"], r["dels"],
          r["notifications"], r["dead_letters"], r["distinct_keys"], r["events_per_minute"],
          r["peak_per_minute"], r["first_ts"], r["last_ts"]) for r in tables],
    ))
    print(f"\nmost changed keys (flapping) -> {keys_path}")
    print(text_table(
        ["host", "db", "table", "kind", "key", "events", "SET", "DEL", "minutes", "first", "last"],
        [(r["host"], r["db"], r["table"], r["kind"], r["key"], r["events"], r["sets"], r["dels"],
          r["active_minutes"], r["first_ts"], r["last_ts"]) for r in top_keys],
    ))
    ops = notifications[:args.top]
    if ops:
        print(f"\nnotifications per channel and op -> {notifications_path}")
        print(text_table(
            ["host", "db", "channel", "op", "events", "dead", "peak/min", "minutes", "first", "last"],
            [(r["host"], r["db"], r["table"], r["op"], r["events"], r["dead_letters"],
              r["peak_per_minute"], r["active_minutes"], r["first_ts"], r["last_ts"]) for r in ops],
        ))
    return 0


def _parquet(df: DataFrame) -> Callable[[str], None]:
    """Writes `df` as a stats file (stats.FILE_OPTIONS) to the path it is given."""
    return df.write.options(**stats_mod.FILE_OPTIONS).mode("overwrite").parquet


def _keys_group() -> str:
    """A job group of its own for each run's keys file, which `_wait_for_group` looks for."""
    return f"swssd-replay-stats-keys-{uuid.uuid4().hex}"


def _in_group(spark: SparkSession, group: str, action: Callable[[str], None], path: str) -> None:
    spark.sparkContext.setJobGroup(group, "swssd replay stats: the keys file")
    action(path)


def _wait_for_group(spark: SparkSession, group: str, running: Future[None]) -> None:
    """Until a job of `group` started, or `running` ended (a failure is its to report)."""
    tracker = spark.sparkContext.statusTracker()
    while not running.done() and not tracker.getJobIdsForGroup(group):
        time.sleep(0.02)


# -- diff ---------------------------------------------------------------------------------


def _state_for_one_host(spark: SparkSession, args: argparse.Namespace) -> tuple[Inputs, DataFrame, str | None]:
    inputs = _load(spark, args)
    state = fold_state(_events(inputs, args, [args.db])).persist()
    host = _single_host(state)
    _report_inputs(inputs, args)
    # Column == builds a Column; pyspark's stub leaves None out of what it compares with
    on_host = cast(Column, F.col("host") == host)
    return inputs, state.where(on_host).select("table", "key", "fields"), host


def run_diff(spark: SparkSession, args: argparse.Namespace) -> int:
    try:
        dump = diff_mod.read_dump(spark, args.dump)
    except diff_mod.DumpFormatError as exc:
        raise UsageError(str(exc)) from None
    _, state, host = _state_for_one_host(spark, args)
    if args.table:
        dump = dump.where(cast(Column, matches("table", args.table)))  # a Column: patterns given
    path = out_path(args, "diff")
    found = _write(diff_mod.diff(state, dump), path)
    by_kind = found.groupBy("table", "kind").agg(
        F.count(F.lit(1)).alias("fields"), F.count_distinct("key").alias("entries")
    ).orderBy("table", "kind").collect()
    print(f"diff of {host or '(no host)'} {args.db} {_when(args)} against {args.dump} -> {path}")
    if not by_kind:
        print("no differences")
        return 0
    print(text_table(["table", "kind", "entries", "fields"],
                     [(r["table"], r["kind"], r["entries"], r["fields"]) for r in by_kind]))
    if args.limit:
        rows = found.orderBy("table", "key", "field").limit(args.limit).collect()
        print(text_table(["table", "key", "kind", "field", "replay", "live"], rows))
    return 1


# -- restore ------------------------------------------------------------------------------


def run_restore(spark: SparkSession, args: argparse.Namespace) -> int:
    from .restore import Target, restore  # redis-py: only this command needs it

    _, state, host = _state_for_one_host(spark, args)
    tables: dict[str, dict[str, dict[str, str]]] = {
        name: {} for name in (args.table or []) if not any(c in name for c in "*?[")
    }
    for row in state.collect():
        tables.setdefault(row["table"], {})[row["key"]] = dict(row["fields"])
    if not tables:
        raise UsageError("nothing to restore: the state is empty; name tables with --table to clear them")
    target = Target(db=args.db, url=args.url, db_id=args.db_id, separator=args.separator,
                    db_config=args.db_config)
    counts = asyncio.run(restore(target, tables))
    print(f"restored {host or '(no host)'} {args.db} {_when(args)} through temp views "
          "(only the difference is published)")
    print(text_table(["table", "entries"], sorted(counts.items())))
    return 0


# -- report -------------------------------------------------------------------------------


def _reject_reasons(spark: SparkSession, path: str | None) -> list[tuple[str, int]]:
    """Rejected lines per reason, read back from where they were written (a few lines, at most)."""
    if path is None:
        return []
    from .inputs import REJECT_SCHEMA

    rows = spark.read.schema(REJECT_SCHEMA).json(path).groupBy("reason").count().collect()
    return sorted(((r["reason"], int(r["count"])) for r in rows), key=lambda x: (-x[1], x[0]))


def _report_title(args: argparse.Namespace) -> dict[str, str]:
    given = {"inputs": " ".join(given_inputs(args))}
    for label, value in (("hosts", args.only_host), ("databases", args.db), ("tables", args.table),
                         ("keys", args.key)):
        if value:
            given[label] = " ".join(value)
    for label, name in (("since", "since"), ("until", "as_of")):
        if getattr(args, name, None):
            given[label] = getattr(args, name)
    return given


def run_report(spark: SparkSession, args: argparse.Namespace) -> int:
    """The HTML report: every figure aggregated in Spark over one cache of the parsed lines
    (overview.py), drawn by page.py; the per-table and per-key figures also go to --output as Parquet."""
    from . import overview
    from .page import DETAIL_STEPS, render
    from .timeparse import parse_duration

    around_us = _instant(args, "around")
    window_us = parse_duration(args.window)
    inputs, parsed = overview.parse_once(_load(spark, args))
    base = overview.base_columns(_filtered(parsed, args, args.db))
    try:
        tables_path, keys_path = out_path(args, "report/tables"), out_path(args, "report/keys")
        overview.fill(inputs)
        keyed = overview.per_key(base).persist()
        try:
            keys = _write(overview.key_figures(keyed), keys_path)
            tables = _write(overview.table_figures(keyed), tables_path).collect()
        finally:
            keyed.unpersist()
        counts = _report_inputs(inputs, args)
        rejects_path = out_path(args, "rejects") if counts.get("rejects") else None
        events = sum(r["events"] for r in tables)
        first_us = min((r["first_us"] for r in tables), default=None)
        last_us = max((r["last_us"] for r in tables), default=None)
        hosts = sorted({r["host"] for r in tables})
        timeline, sources = (overview.timeline(base, first_us, last_us, tables)
                             if first_us is not None and last_us is not None else (None, []))
        top_keys, flapping, keys_total, flapping_total = overview.top(keys, args.top)
        per_table = overview.top_per_table(keys, tables, overview.BUSIEST_TABLES,
                                           min(args.top, overview.KEYS_PER_TABLE))
        most_history, most_around = DETAIL_STEPS[0]  # the page keeps what fits
        overview.add_histories(base, top_keys + flapping, most_history)
        around = (overview.around(base, around_us, window_us, most_around)
                  if around_us is not None else None)
        dead, dead_total = overview.dead_letters(base, overview.DEAD_LETTERS) if any(
            r["dead_letters"] for r in tables) else ([], 0)
        ov = overview.Overview(
            counts=counts, rejects_path=rejects_path, reject_reasons=_reject_reasons(spark, rejects_path),
            sources=sources, events=events, first_us=first_us, last_us=last_us, hosts=hosts,
            tables=tables, timeline=timeline, keys_total=keys_total, flapping_total=flapping_total,
            top_keys=top_keys, flapping=flapping, around=around, per_table=per_table, dead_letters=dead,
            dead_letters_total=dead_total,
        )
    finally:
        overview.release(inputs)
    text = render(ov, _report_title(args))
    out = Path(args.out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_replacing(out, text)
    except OSError as exc:
        raise UsageError(f"cannot write the report to {out}: {exc.strerror or exc}") from None
    print(f"per table -> {tables_path}; per key -> {keys_path}")
    print(f"report of {events} events on {len(hosts)} host(s), {len({(r['db'], r['table']) for r in tables})} "
          f"table(s), {keys_total} keys ({flapping_total} flapping) -> {out} ({len(text.encode()) / 1e6:.2f} MB)")
    return 0


# -- compact ------------------------------------------------------------------------------


def run_compact(spark: SparkSession, args: argparse.Namespace) -> int:
    """cli.main checked --out (segment_mod.check_out) before Spark started."""
    out = Path(args.out)
    segments = getattr(args, "segments", [])
    inputs = _load(spark, args)
    counts = segment_mod.compact(inputs, input_options(args), segments, out)
    _note_long_lines(inputs)
    _print_counts(counts, str(out / "rejects") if counts["rejects"] else None)
    sources = segment_mod.sources_of(given_inputs(args), segments)
    print(f"segment of {len(sources)} capture file(s): {counts['events']} events -> {out}")
    return 0


COMMANDS = {
    "state": run_state,
    "history": run_history,
    "stats": run_stats,
    "diff": run_diff,
    "restore": run_restore,
    "compact": run_compact,
    "report": run_report,
}
