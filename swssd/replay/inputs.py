"""Reading captures into one events DataFrame: swssd JSON Lines and SONiC swss.rec, mixed freely.

Every input line is classified by its first character: `{` is a swssd JSON record, anything
else is read as swss.rec. A line becomes an event, a marker (swss.rec's `recording started`),
blank, or a reject with a reason; nothing is dropped without being counted.

Order. Events sort by `ord` = (ts, rotation, file, block, line): equal timestamps keep their
order in the file (`block` is the byte offset of the split Spark read, `line` increases within a
split), and a rotated file counts as older than a less rotated one with the same timestamp
(`swss.rec.2.gz` < `swss.rec.1` < `swss.rec`), the rotation index being the `.N` / `.N.gz`
suffix of the file name. Two different files with the same rotation index and the same
timestamp (one host's captures in two places) are ordered by a hash of their paths: arbitrary,
but the same in every run.

Host. `--host` wins; otherwise a JSON record's own `host`; otherwise the host swssd recorded
beside its swss.rec (`_swssd_host` in the file's directory, the name its JSON records carry, so
that one daemon is one host whichever of its captures is replayed; SONiC's own swss.rec has none);
otherwise the first group of `host_pattern` matched against the file's path, by default the name
of its parent directory
(`captures/sw-leaf1/swss.rec` -> `sw-leaf1`).

Database. swss.rec lines do not name one: a `TABLE|key` line (CONFIG_DB and STATE_DB style) is
given `CONFIG_DB`, a `TABLE:key` line `APPL_DB`, unless `rec_db` names one for every line.

swss.rec is not escaped, so parsing is anchored on the op token: the table is what precedes the
first `:` or `|`, the key runs up to the first `|SET` / `|DEL` token, and each field is split at
its first `:`. A `|` inside a value is kept when the text after it holds no `:` before the next
`|` (`scheduler:[SCHEDULER|scheduler.0]`). Known limits of the format itself: a key containing
`|SET|` or `|DEL|`, or a value containing `|x:y`, cannot be told apart from the structure; and
when a key is deleted and set again between two pops, swss.rec holds one bare SET with the new
fields, so the fields only the old entry had survive the replay (swssd's own JSON capture
records that case as DEL followed by SET and replays exactly).

Kind. `kind` is a JSON record's own (`queue`, `subscriber`, `notification`, `zmq` or `state`) and null
where it has none: a state record, a record from before kinds were recorded, every swss.rec
line; null replays as state (a SET merges). A notification's `op` may be any text; every other
record's is SET or DEL. A kind this reader does not know is a reject, since it cannot tell how
to replay it. swss.rec does not say which lines a subscriber wrote, so their SETs merge there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from ..capture.format import KINDS
from ..schema import REC_STARTED
from .inputs_doc import DEFAULT_HOST_PATTERN, DEFAULT_MAX_LINE_BYTES
from .paths import recorded_hosts
from .readable import (
    ALL_LINE_KINDS,
    JSON_LINES,
    MAXLENGTH_OPTION,
    REC_LINES,
    InputCheck,
    LongLine,
    file_uri,
    hadoop_max_length,
)
from .sqltext import Quote, quote_name, quoting, sql_over, sql_string

JSON_SCHEMA = StructType(
    [
        StructField("ts", StringType()),
        StructField("host", StringType()),
        StructField("db", StringType()),
        StructField("table", StringType()),
        StructField("key", StringType()),
        StructField("op", StringType()),
        StructField("fvs", ArrayType(ArrayType(StringType()))),
        StructField("seq", LongType()),
        StructField("dead_letter", BooleanType()),
        StructField("reason", StringType()),
        StructField("kind", StringType()),
    ]
)

_REC_TS = r"^\d{4}-\d{2}-\d{2}\.\d{2}:\d{2}:\d{2}\.\d{6}\|"
#: the instants (UTC microseconds) a timestamp may take: Python's years 1 to 9999, a day inside
#: each end so that the instant is a Python datetime in any zone (PySpark hands rows over in the
#: local one). Spark holds instants far outside them (year 0, year -1); one such line would end
#: every command that brings its events to Python.
TS_RANGE_US = (-62_135_510_400_000_000, 253_402_214_400_000_000 - 1)
BAD_TS = "bad ts: outside the years 1 to 9999"
_FIELD_SPLIT = r"\|(?=[^|]*:)"

EVENT_COLUMNS = [
    "host", "db", "table", "key", "op", "fvs", "ts", "seq", "dead_letter", "dl_reason", "kind",
    "source", "ord",
]
"""`fvs` is array<array<string>>: [[field, value], ...] in the order of the capture; `kind` is
null, state, queue, subscriber, notification or zmq (see the module docstring)."""
REJECT_COLUMNS = ["source", "reason", "value"]
REJECT_SCHEMA = "source STRING, reason STRING, value STRING"
COUNTS = ["lines", "events", "markers", "blank", "rejects"]


@dataclass
class InputOptions:
    paths: Sequence[str]
    host: str | None = None
    host_pattern: str = DEFAULT_HOST_PATTERN
    timezone: str = "UTC"
    rec_db: str | None = None
    #: input files left out because they cannot be read (readable.py): path -> why; each is one reject
    unreadable: tuple[tuple[str, str], ...] = ()
    #: lines longer than this many bytes are not read: each is one reject (readable.py)
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    #: where those lines are, found by a check of the inputs already running (readable.InputCheck,
    #: the command line's); None: `load` starts one
    long_lines: Callable[[], tuple[LongLine, ...]] | None = None
    #: input -> the kinds of line it may hold (JSON, REC), found by that check; an input missing
    #: there, or without it, is read for both
    line_kinds: Callable[[], dict[str, frozenset[str]]] | None = None
    #: `.gz` files damaged after some text (readable.Cut): (the file, why); each is one rejected line
    cuts: tuple[tuple[str, str], ...] = ()
    #: (a path among `paths`, the input file it stands for): a cut file's readable part, read in its place
    replaced: tuple[tuple[str, str], ...] = ()


@dataclass
class Stored:
    """Inputs read before and kept as Parquet (a capture segment, segment.py): their events, their
    rejected lines (None when there were none), and the counts of the lines they came from."""

    events: DataFrame
    rejects: DataFrame | None
    counts: dict[str, int]


@dataclass
class Inputs:
    """The classified lines of the text inputs (`line_kind`: event, marker, blank, reject; None
    when every input is a segment) with the counts observed while the first action read them,
    and the stored inputs read beside them: one stream of events, rejects and counts."""

    lines: DataFrame | None
    observation: Observation | None
    stored: Sequence[Stored] = ()
    #: files left out unread: (path, why), one reject each
    unreadable: tuple[tuple[str, str], ...] = ()
    #: the lines over the limit, left out unread: one reject each (waits for the check of the inputs)
    long_lines: Callable[[], tuple[LongLine, ...]] = tuple
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    #: the cut `.gz` files: (path, why), one rejected line each
    cuts: tuple[tuple[str, str], ...] = ()

    @property
    def events(self) -> DataFrame:
        parts = [s.events for s in self.stored]
        if self.lines is not None:
            parts.insert(0, self.lines.where("line_kind = 'event'").selectExpr(*map(quote_name, EVENT_COLUMNS)))
        return _union(parts)

    @property
    def rejects(self) -> DataFrame:
        parts = [s.rejects for s in self.stored if s.rejects is not None]
        if self.lines is not None:
            parts.insert(0, self.lines.where("line_kind = 'reject'").selectExpr(*REJECT_COLUMNS))
        rows = [(file_uri(path), why, "") for path, why in self.unreadable + self.cuts]
        rows += [(file_uri(x.path), x.reason(self.max_line_bytes), "") for x in self.long_lines()]
        if rows:
            spark = (self.lines if self.lines is not None else self.stored[0].events).sparkSession
            parts.append(spark.createDataFrame(rows, REJECT_SCHEMA))
        if not parts:  # stored inputs only, none with a rejected line
            return self.stored[0].events.sparkSession.createDataFrame([], REJECT_SCHEMA)
        return _union(parts)

    def counts(self, counted: Mapping[str, int] | None = None) -> dict[str, int]:
        """lines, events, markers, blank, rejects: available once an action has run. `counted`:
        the text lines' counts of a command that counted them itself (`load(observe=False)`)."""
        observed: Mapping[str, Any] = counted or {}
        # Inputs without a single line give Spark no partition to observe: no metrics row.
        with contextlib.suppress(Py4JJavaError):
            observed = self.observation.get if self.observation is not None else observed
        counts = {k: int(observed.get(k) or 0) + sum(s.counts.get(k, 0) for s in self.stored) for k in COUNTS}
        long_lines = len(self.long_lines()) + len(self.cuts)
        counts["lines"] += long_lines
        counts["rejects"] += len(self.unreadable) + long_lines
        return counts


def _union(parts: list[DataFrame]) -> DataFrame:
    """By column name: a stored schema lists the same columns, written by this module's plan."""
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out


_UTC_NAMES = {"UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z", "+00:00", "Zulu", "UCT", "Universal"}

# The parse is SQL expression text, not Column objects: every Column function is a py4j call into
# the JVM (about 1 ms each in a freshly started one), and the few thousand of them the plan took
# cost a small replay seconds; a selectExpr of text is about one call per expression (BENCHMARKS.md,
# "Replay start-up"). The expressions are the ones the Column functions built, so the plans and
# results are the same. Higher-order functions use fixed lambda variable names (Python lambdas get
# fresh names on every call, which end up in the generated Java code, so every command would
# compile its stages anew instead of finding them in Spark's code cache).
_BIG = 1 << 30

def _json_ts(ts: str, utc_session: bool) -> str:
    """A JSON record's `ts` as a timestamp; null when it is not one.

    swssd writes `2026-11-25T23:41:16.123456Z`. Spark's general parser reads that too, but looks
    the zone up with a regular expression compiled per call, which costs about as much as the
    rest of the line's parsing; when the session's zone is UTC, the fixed form is read as a local
    time there instead (the same parser, without the zone). Any other form takes the general way.
    """
    general = f"try_to_timestamp({ts})"
    if not utc_session:
        return general
    return (f"CASE WHEN ((length({ts}) = 27) AND endswith({ts}, 'Z'))"
            f" THEN CAST(try_cast(substring({ts}, 1, 26) AS TIMESTAMP_NTZ) AS TIMESTAMP) ELSE {general} END")


def _rotation(file_name: str) -> str:
    """The N of name.N or name.N.gz (1 to 9 digits), else 0; without a regular expression."""
    last = f"substring_index({file_name}, '.', -1)"
    before_gz = f"substring_index(substring_index({file_name}, '.', -2), '.', 1)"
    number = f"CASE WHEN ({last} = 'gz') THEN {before_gz} ELSE {last} END"
    digits = f"(((length({number}) >= 1) AND (length({number}) <= 9)) AND (translate({number}, '0123456789', '') = ''))"
    return f"CASE WHEN {digits} THEN CAST({number} AS INT) ELSE 0 END"


def _source(replaced: Sequence[tuple[str, str]], q: Quote) -> str:
    """The input file a line came from: a cut file's, for the lines of its readable part."""
    if not replaced:
        return "_metadata.file_path"
    pairs = ", ".join(f"{q(file_uri(copy))}, {q(file_uri(original))}" for copy, original in sorted(replaced))
    return f"coalesce(try_element_at(map({pairs}), _metadata.file_path), _metadata.file_path)"


#: the two kinds of line, read apart (see `load`)
JSON, REC = JSON_LINES, REC_LINES
#: which lines each reads: JSON records start with `{`
FORMAT_FILTERS = {JSON: "startswith(value, '{')", REC: "(NOT startswith(value, '{'))"}


def _parse_texts(fmt: str, utc_session: bool, q: Quote, replaced: Sequence[tuple[str, str]] = ()) -> list[list[str]]:
    """Every line of one kind read once: from_json for JSON lines; the op-token search and the
    checks that need the raw text for swss.rec lines; and where the line came from. Each parse
    appears once here (a from_json used by several columns would otherwise be inlined into each),
    and nothing after this needs the raw line except the rejects, so a command that does not
    write them does not carry the text any further.

    A swss.rec line is taken apart with string searches, not regular expressions: each regular
    expression function copies the line into a Java string and scans it, and together they were
    most of the parse (BENCHMARKS.md, "Replay against plain Spark"). The one left, on the 27
    characters of the timestamp, checks its form. As expression text, projection by projection."""
    source = _source(replaced, q)
    where = [
        "value",
        f"{source} AS source",
        "_metadata.file_block_start AS block",
        "line",
        f"{_rotation('_metadata.file_name')} AS rotation",
        f"xxhash64({source}) AS file",
    ]
    if fmt == JSON:
        return [
            [*where, f"from_json(value, {q(JSON_SCHEMA.json())}) AS j"],
            ["*", f"{_json_ts('j.ts', utc_session)} AS j_ts"],
        ]
    # Java's \s: space, tab, newline, vertical tab, form feed, carriage return
    spaces = "concat(' ', char(9), char(10), char(11), char(12), char(13))"
    blank = f"((value = '') OR ((ascii(value) IN (9, 10, 11, 12, 13, 32)) AND (translate(value, {spaces}, '') = '')))"
    marker = f"((octet_length(value) = {_REC_HEAD + len(REC_STARTED.encode())}) AND endswith(value, {q(REC_STARTED)}))"
    return [
        [
            *where,
            f"{blank} AS is_blank",
            f"(substring(value, 1, {_REC_HEAD}) RLIKE {q(_REC_TS)}) AS rec_ts_ok",
            f"{_rec_ts(utc_session)} AS local_ts",
            f"{_up_to_token('value', 'SET', 1)} AS set_1",
        ],
        ["*", f"(rec_ts_ok AND {marker}) AS is_marker", f"{_before_token('value', 'set_1', 'SET')} AS before_set"],
        [
            "*",
            # a `|DEL|` may share its last `|` with the `|SET|` that follows it; and a `|DEL` that
            # ends the line is a token too
            "CASE WHEN endswith(before_set, '|DEL') THEN concat(before_set, '|') ELSE before_set END AS del_in",
        ],
        ["*", f"{_up_to_token('del_in', 'DEL', 1)} AS del_1"],
        ["*", f"{_before_token('del_in', 'del_1', 'DEL')} AS before_del"],
        [
            "*",
            # the first token: a `|DEL|` before the first `|SET|` (1), that `|SET|` (2), or a `|SET`
            # ending the line (3); null without one
            "CASE WHEN (octet_length(before_del) < octet_length(before_set)) THEN 1"
            " WHEN (octet_length(before_set) < octet_length(value)) THEN 2"
            f" WHEN (endswith(value, '|SET') AND (octet_length(value) >= {_REC_HEAD + 4})) THEN 3 END AS token",
        ],
        [
            "*",
            "CASE token WHEN 1 THEN 'DEL' WHEN 2 THEN 'SET' WHEN 3 THEN 'SET' END AS op_token",
            # the timestamp and TABLE<sep>key: the text before the token
            "CASE token WHEN 1 THEN before_del WHEN 2 THEN before_set"
            f" WHEN 3 THEN {_bytes('value', '1', 'octet_length(value) - 4')} END AS head",
        ],
        [
            "*",
            f"{_bytes('head', str(_REC_HEAD + 1), str(_BIG))} AS table_key",
            # what follows `|SET|` (or `|DEL|`): empty after a token that ends the line
            f"{_bytes('value', 'octet_length(head) + 6', str(_BIG))} AS fields_text",
        ],
        # the text before the first `:` or `|` (byte searches that stop there: instr walks by characters)
        ["*", "substring_index(substring_index(table_key, ':', 1), '|', 1) AS before_sep"],
        [
            "*",
            # that text, when there is some and a separator after it
            "CASE WHEN (octet_length(before_sep) < octet_length(table_key)) THEN before_sep ELSE '' END AS rec_table",
            "CASE WHEN (fields_text = '') THEN CAST(array() AS ARRAY<STRING>)"
            f" ELSE split(fields_text, {q(_FIELD_SPLIT)}) END AS tokens",
            # the first field token holds a `:` exactly when the text up to the first `|` does
            # (a `|` followed by text without `:` stays inside the token: see the module docstring)
            "((fields_text <> '') AND (instr(substring_index(fields_text, '|', 1), ':') = 0)) AS first_field_bare",
        ],
    ]


#: the bytes of a swss.rec line's timestamp and the `|` after it (ASCII once it has the form)
_REC_HEAD = 27


def _up_to_token(text: str, op: str, n: int) -> str:
    """The text before the `n`th `|<op>|`: the whole text with fewer.

    substring_index compares bytes from the start and stops at the match, where a search by
    character position (instr) walks every character of the line, twice for two tokens."""
    return f"substring_index({text}, '|{op}|', {n})"


def _before_token(text: str, first: str, op: str) -> str:
    """The text before the first `|<op>|` after the timestamp's `|`, given the text before the
    first of all (`first`, a column of the projection before: a CASE's branches are not shared
    subexpressions, so written out here it was searched for twice). A match at the timestamp's
    own `|` is not a token (the line's rest starts `<op>|`): the next one is."""
    return f"CASE WHEN (octet_length({first}) = {_REC_HEAD - 1}) THEN {_up_to_token(text, op, 2)} ELSE {first} END"


def _bytes(text: str, start: str, length: str) -> str:
    """`length` bytes of `text` from byte `start` (from 1): a copy, without walking the characters
    (each cut is next to an ASCII `|` or `:`, never inside a character). A walk by characters
    also misreads a line that is not UTF-8: Spark's substring takes a stray lead byte for the
    start of a character of up to 4 bytes, skips the `|` after it, and may copy bytes from past
    the end of the line."""
    return f"CAST(substring(CAST({text} AS BINARY), {start}, {length}) AS STRING)"


def _rec_ts(utc_session: bool) -> str:
    """A swss.rec line's timestamp read as a UTC wall clock (to_utc_timestamp then reads it in
    the capture's zone); null when it is not a time.

    A cast of the ISO form: the pattern's parser cost about as much as the op token's search, and
    read the time in the session's zone, which shifted every swss.rec event by that zone's offset
    in a session not in UTC. There the text gets a `Z` (a zone the cast looks up with a regular
    expression on every line); in a UTC session, a time without one means the same and costs less.
    Of what rec_ts_ok lets through, both refuse the same (month 13, 24 o'clock, February 30) and
    read the rest alike (tests/test_replay_rec_parse.py)."""
    iso = "concat(substring(value, 1, 10), ' ', substring(value, 12, 15))"
    if utc_session:
        return f"CAST(try_cast({iso} AS TIMESTAMP_NTZ) AS TIMESTAMP)"
    return f"try_cast(concat({iso}, 'Z') AS TIMESTAMP)"


def _out_of_range(ts: str) -> str:
    low, high = TS_RANGE_US
    return f"(NOT (unix_micros({ts}) BETWEEN {low} AND {high}))"


def _json_columns(q: Quote) -> dict[str, str]:
    not_notification = "(NOT (j.kind <=> 'notification'))"
    kinds = ", ".join(q(k) for k in sorted(KINDS))
    reason = (
        # from_json gives a struct of nulls, never null, for text that is not a JSON object
        "CASE WHEN (((j.ts IS NULL) AND (j.`key` IS NULL)) AND (j.op IS NULL)) THEN 'malformed JSON'"
        " WHEN (j_ts IS NULL) THEN 'bad or missing ts'"
        f" WHEN {_out_of_range('j_ts')} THEN '{BAD_TS}'"
        " WHEN (((j.db IS NULL) OR (j.`table` IS NULL)) OR (j.`key` IS NULL)) THEN 'missing db, table or key'"
        f" WHEN ((j.kind IS NOT NULL) AND (NOT (j.kind IN ({kinds})))) THEN 'unknown kind'"
        " WHEN ((j.kind <=> 'notification') AND (j.op IS NULL)) THEN 'notification without op'"
        f" WHEN ({not_notification} AND (NOT coalesce((j.op IN ('SET', 'DEL')), false)))"
        " THEN 'op is neither SET nor DEL'"
        f" WHEN (({not_notification} AND (j.fvs IS NULL)) AND (j.op = 'SET')) THEN 'SET without fvs'"
        # every pair is two non-null strings
        " WHEN exists(j.fvs, p -> size(p) != 2 OR get(p, 0) IS NULL OR get(p, 1) IS NULL)"
        " THEN 'fvs is not a list of [field, value] pairs' END"
    )
    return {
        "reason": reason,
        "host": "j.host",
        "db": "j.db",
        "table": "j.`table`",
        "key": "j.`key`",
        "op": "j.op",
        "fvs": "coalesce(j.fvs, CAST(array() AS ARRAY<ARRAY<STRING>>))",
        "ts": "j_ts",
        "seq": "j.seq",
        "dead_letter": "coalesce(j.dead_letter, false)",
        "dl_reason": "j.reason",
        "kind": "j.kind",
    }


def _rec_columns(tz: str, rec_db: str | None, q: Quote) -> dict[str, str]:
    separator = _bytes("table_key", "octet_length(rec_table) + 1", "1")
    field_without_colon = q("field without ':'")
    reason = (
        "CASE WHEN (NOT rec_ts_ok) THEN 'no swss.rec timestamp'"
        " WHEN (local_ts IS NULL) THEN 'bad timestamp'"
        f" WHEN {_out_of_range('local_ts')} THEN '{BAD_TS}'"
        " WHEN (op_token IS NULL) THEN 'no SET/DEL op token'"
        " WHEN (rec_table = '') THEN 'no TABLE<sep>key before the op'"
        f" WHEN first_field_bare THEN {field_without_colon} END"
    )
    db = q(rec_db) if rec_db else f"CASE WHEN ({separator} = '|') THEN 'CONFIG_DB' ELSE 'APPL_DB' END"
    return {
        "reason": reason,
        "host": "CAST(NULL AS STRING)",
        "db": db,
        "table": "rec_table",
        "key": _bytes("table_key", "octet_length(rec_table) + 2", str(_BIG)),
        "op": "op_token",
        "fvs": "transform(tokens, t -> array(substring_index(t, ':', 1), substring(t, instr(t, ':') + 1)))",
        # the conversion from a zone without offsets is the identity, a cost on every line
        "ts": "local_ts" if tz in _UTC_NAMES else f"to_utc_timestamp(local_ts, {q(tz)})",
        "seq": "CAST(NULL AS BIGINT)",
        "dead_letter": "false",
        "dl_reason": "CAST(NULL AS STRING)",
        "kind": "CAST(NULL AS STRING)",
    }


def _recorded_host(recorded: dict[str, str], q: Quote) -> str:
    """The host recorded in a line's directory (paths.recorded_hosts), as the first argument of a
    coalesce (with its comma); nothing when no directory has one."""
    if not recorded:
        return ""
    pairs = ", ".join(f"{q(directory)}, {q(host)}" for directory, host in sorted(recorded.items()))
    directory = "substring(source, 1, length(source) - length(substring_index(source, '/', -1)) - 1)"
    return f"try_element_at(map({pairs}), {directory}), "


#: files Spark reads whole, in one task each (a codec that cannot start mid-stream)
UNSPLITTABLE_SUFFIXES = (".gz", ".deflate", ".zst", ".lz4", ".snappy")


def read_groups(paths: Sequence[str]) -> list[list[str]]:
    """The inputs as Spark should scan them: the compressed files that cannot be split first,
    apart from the others.

    Spark packs files into tasks by their size on disk, and a `.gz` file holds several times its
    size in text: scanned with the others, a fleet's rotated `.gz` files shared one task, which
    then ran alone for two thirds of the parse (BENCHMARKS.md, "The parse's tasks"). Scanned
    apart, their small total size spreads them over `spark.sql.files.minPartitionNum` tasks (one
    each, unless there are many), and being first they start first rather than last."""
    packed = [p for p in paths if p.endswith(UNSPLITTABLE_SUFFIXES)]
    plain = [p for p in paths if not p.endswith(UNSPLITTABLE_SUFFIXES)]
    return [group for group in (packed, plain) if group]


def plan_texts(opts: InputOptions, fmt: str, utc_session: bool = True, q: Quote = sql_string) -> list[list[str]]:
    """The projections `load` builds for the lines of one format (JSON or REC), as SQL expression
    text, in order (no Spark needed: the command parses them while the JVM starts, see cli.py)."""
    columns = _json_columns(q) if fmt == JSON else _rec_columns(opts.timezone, opts.rec_db, q)
    path_host = (
        # the parent directory's name, without a regular expression on every line
        "substring_index(substring_index(source, '/', -2), '/', 1)"
        if opts.host_pattern == DEFAULT_HOST_PATTERN
        else f"regexp_extract(source, {q(opts.host_pattern)}, 1)"
    )
    originals = dict(opts.replaced)
    recorded = _recorded_host({} if opts.host else recorded_hosts([originals.get(p, p) for p in opts.paths]), q)
    host = (
        q(opts.host)
        if opts.host
        else f"coalesce(host, {recorded}nullif(path_host, ''), 'unknown')"
    )
    line_checks = ["is_blank", "is_marker"] if fmt == REC else ["false AS is_blank", "false AS is_marker"]
    return [
        *_parse_texts(fmt, utc_session, q, opts.replaced),
        [
            "value", "source", "block", "line", "rotation", "file", *line_checks,
            *[f"{expression} AS {quote_name(name)}" for name, expression in columns.items()],
        ],
        [
            # computed once, apart: two columns below depend on it (and nullif reads path_host twice)
            "*",
            "CASE WHEN is_blank THEN 'blank' WHEN is_marker THEN 'marker'"
            " WHEN (reason IS NOT NULL) THEN 'reject' ELSE 'event' END AS line_kind",
            f"{path_host} AS path_host",
        ],
        [
            "line_kind",
            f"CASE WHEN (line_kind = 'event') THEN {host} END AS host",
            "db", "`table`", "`key`", "op", "fvs", "ts", "seq", "dead_letter", "dl_reason", "kind",
            "source", "reason", "value",
            "named_struct('ts', ts, 'rotation', (- rotation), 'file', file, 'block', block, 'line', line) AS ord",
        ],
    ]


def _by_kinds(paths: Sequence[str], kinds: dict[str, frozenset[str]],
              replaced: dict[str, str]) -> list[tuple[frozenset[str], list[str]]]:
    """`paths` parted by the kinds of line each may hold (`kinds`, by input: a cut file's copy
    by its original), in order; a path not known there may hold both."""
    parted: dict[frozenset[str], list[str]] = {}
    for path in paths:
        parted.setdefault(kinds.get(replaced.get(path, path)) or ALL_LINE_KINDS, []).append(path)
    return list(parted.items())


#: the name the parse's query reads its scan by (a temporary view while the query is planned)
_SCAN_VIEW = "swssd_replay_scan"


def _query(source: str, projections: list[list[str]]) -> str:
    """The projections over `source` as one query: the plan is built in one call into the JVM,
    where a selectExpr takes about one call an expression (BENCHMARKS.md, "Replay start-up")."""
    text = f"SELECT * FROM {source}"
    for projection in projections:
        text = f"SELECT {', '.join(projection)} FROM ({text})"
    return text


def load(spark: SparkSession, opts: InputOptions, stored: Sequence[Stored] = (), observe: bool = True) -> Inputs:
    """Classify and parse every line of the inputs; counts are observed by the first action
    (unless not `observe`: the observation is an operator Spark cannot compile, some 8 % of the
    read, which a command that aggregates every line counts itself instead).
    `stored` inputs (segments) join them as they are; with no paths, no text is read."""
    if not opts.paths:
        if not stored:
            raise ValueError("no inputs" + (": none of them could be read" if opts.unreadable else ""))
        return Inputs(None, None, stored, opts.unreadable, cuts=opts.cuts)
    utc_session = spark.conf.get("spark.sql.session.timeZone") in _UTC_NAMES
    limit = opts.max_line_bytes
    long_lines, line_kinds = opts.long_lines, opts.line_kinds
    if long_lines is None:
        check = InputCheck(opts.paths, limit)
        long_lines, line_kinds = check.long_lines, line_kinds or check.line_kinds
    # a line over the limit is skipped by Hadoop's reader, or reaches Spark cut at the limit plus
    # 3 bytes at the end of a split (readable.py): either way it is not read, and counted apart
    reader = spark.read.option(MAXLENGTH_OPTION, str(hadoop_max_length(limit)))
    # the file's metadata taken from each scan: a union of scans has none of its own
    q = quoting(spark)
    # Each format reads the text apart and keeps its own lines: the JSON parser cannot be
    # compiled into Spark's generated code, and in one projection with the swss.rec parse it kept
    # that from being compiled too (twice the time of reading the text twice, BENCHMARKS.md
    # "Replay against plain Spark"). `line` is numbered before the lines are parted, so that
    # both number the same lines of a split alike.
    # A file that holds lines of one kind only (the check of the inputs read it through) is read
    # for that kind alone: a fleet's swss.rec is not read a second time for JSON records.
    queries = {fmt: _query(f"{_SCAN_VIEW} WHERE {FORMAT_FILTERS[fmt]}", plan_texts(opts, fmt, utc_session, q))
               for fmt in FORMAT_FILTERS}
    parts = []
    for group in read_groups(opts.paths):
        for kinds, paths in _by_kinds(group, line_kinds() if line_kinds else {}, dict(opts.replaced)):
            # the file's metadata taken from each scan: a union of scans has none of its own
            scan = reader.text(paths).selectExpr("value", "_metadata", "monotonically_increasing_id() AS line").where(
                f"octet_length(value) <= {int(limit)}")
            query = " UNION ALL ".join(queries[fmt] for fmt in FORMAT_FILTERS if fmt in kinds)
            parts.append(sql_over(scan, query, _SCAN_VIEW))
    lines = _union(parts)
    if not observe:
        return Inputs(lines, None, stored, opts.unreadable, long_lines, limit, opts.cuts)
    observation = Observation("replay_inputs")
    lines = lines.observe(
        observation,
        F.expr("count(1) AS lines"),
        *(
            F.expr(f"sum(CASE WHEN (line_kind = '{kind_name}') THEN 1 ELSE 0 END) AS {count_name}")
            for kind_name, count_name in
            (("event", "events"), ("marker", "markers"), ("blank", "blank"), ("reject", "rejects"))
        ),
    )
    return Inputs(lines, observation, stored, opts.unreadable, long_lines, limit, opts.cuts)
