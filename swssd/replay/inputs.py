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

Host. `--host` wins; otherwise a JSON record's own `host`; otherwise the first group of
`host_pattern` matched against the file's path, by default the name of its parent directory
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

from collections.abc import Sequence
from dataclasses import dataclass

from py4j.protocol import Py4JJavaError
from pyspark.sql import Column, DataFrame, Observation, SparkSession
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
from .inputs_doc import DEFAULT_HOST_PATTERN

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
_REC_TS_FORMAT = "yyyy-MM-dd.HH:mm:ss.SSSSSS"
_OP_SPLIT = r"\|(?=(?:SET|DEL)(?:\||$))"
_FIELD_SPLIT = r"\|(?=[^|]*:)"

EVENT_COLUMNS = [
    "host", "db", "table", "key", "op", "fvs", "ts", "seq", "dead_letter", "dl_reason", "kind",
    "source", "ord",
]
"""`fvs` is array<array<string>>: [[field, value], ...] in the order of the capture; `kind` is
null, state, queue, subscriber, notification or zmq (see the module docstring)."""
REJECT_COLUMNS = ["source", "reason", "value"]
COUNTS = ["lines", "events", "markers", "blank", "rejects"]


@dataclass
class InputOptions:
    paths: Sequence[str]
    host: str | None = None
    host_pattern: str = DEFAULT_HOST_PATTERN
    timezone: str = "UTC"
    rec_db: str | None = None


@dataclass
class Inputs:
    """The classified lines (`line_kind`: event, marker, blank, reject), and the counts observed
    while the first action read them."""

    lines: DataFrame
    observation: Observation

    @property
    def events(self) -> DataFrame:
        return self.lines.where(F.col("line_kind") == "event").select(*EVENT_COLUMNS)

    @property
    def rejects(self) -> DataFrame:
        return self.lines.where(F.col("line_kind") == "reject").select(*REJECT_COLUMNS)

    def counts(self) -> dict[str, int]:
        """lines, events, markers, blank, rejects: available once an action has run."""
        try:
            observed = self.observation.get
        except Py4JJavaError:
            # Inputs without a single line give Spark no partition to observe: no metrics row.
            observed = {}
        return {k: int(observed.get(k) or 0) for k in COUNTS}


_UTC_NAMES = {"UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z", "+00:00", "Zulu", "UCT", "Universal"}


def _json_ts(ts: Column, utc_session: bool) -> Column:
    """A JSON record's `ts` as a timestamp; null when it is not one.

    swssd writes `2026-11-25T23:41:16.123456Z`. Spark's general parser reads that too, but looks
    the zone up with a regular expression compiled per call, which costs about as much as the
    rest of the line's parsing; when the session's zone is UTC, the fixed form is read as a local
    time there instead (the same parser, without the zone). Any other form takes the general way.
    """
    general = F.try_to_timestamp(ts)
    if not utc_session:
        return general
    canonical = (F.length(ts) == 27) & ts.endswith("Z")
    return F.when(canonical, F.substring(ts, 1, 26).try_cast("timestamp_ntz").cast("timestamp")).otherwise(
        general
    )


def _rotation(file_name: Column) -> Column:
    """The N of name.N or name.N.gz (1 to 9 digits), else 0; without a regular expression."""
    last = F.substring_index(file_name, ".", -1)
    before_gz = F.substring_index(F.substring_index(file_name, ".", -2), ".", 1)
    number = F.when(last == "gz", before_gz).otherwise(last)
    digits = (F.length(number) >= 1) & (F.length(number) <= 9) & (F.translate(number, "0123456789", "") == "")
    return F.when(digits, number.cast("int")).otherwise(0)


def _parse_once(spark: SparkSession, paths: Sequence[str], utc_session: bool = False) -> DataFrame:
    """Every line read once, in one projection over the files: from_json for JSON lines, the
    op-token split and the checks that need the raw text for the others, and where the line came
    from. Each parse appears once here (a from_json or split used by several columns would
    otherwise be inlined into each), and nothing after this needs the raw line except the
    rejects, so a command that does not write them does not carry the text any further."""
    value = F.col("value")
    is_json = value.startswith("{")
    rec = ~is_json
    meta = F.col("_metadata")
    s1 = spark.read.text(list(paths)).select(
        value,
        meta["file_path"].alias("source"),
        meta["file_block_start"].alias("block"),
        F.monotonically_increasing_id().alias("line"),
        _rotation(meta["file_name"]).alias("rotation"),
        F.xxhash64(meta["file_path"]).alias("file"),
        is_json.alias("is_json"),
        F.when(is_json, F.from_json(value, JSON_SCHEMA)).alias("j"),
        F.when(rec, F.split(F.substring(value, 28, 1 << 30), _OP_SPLIT, 2)).alias("parts"),
        # a line starting with { is none of these: no regular expression (and no copy of the
        # line as a Java string) for JSON lines
        (rec & value.rlike(r"^\s*$")).alias("is_blank"),
        (rec & value.rlike(_REC_TS + REC_STARTED + "$")).alias("is_marker"),
        (rec & value.rlike(_REC_TS)).alias("rec_ts_ok"),
        F.when(rec, F.try_to_timestamp(F.substring(value, 1, 26), F.lit(_REC_TS_FORMAT))).alias("local_ts"),
    )
    s2 = s1.select(
        "*",
        _json_ts(F.col("j.ts"), utc_session).alias("j_ts"),
        F.try_element_at("parts", F.lit(1)).alias("table_key"),
        # "SET|f:v|..." or "DEL"; null without an op token
        F.try_element_at("parts", F.lit(2)).alias("tail"),
    )
    fields_text = F.substring("tail", 5, 1 << 30)
    return s2.select(
        "*",
        F.regexp_extract("table_key", r"^([^:|]+)[:|]", 1).alias("rec_table"),
        F.when(fields_text == "", F.array().cast("array<string>"))
        .otherwise(F.split(fields_text, _FIELD_SPLIT))
        .alias("tokens"),
    )


# Higher-order functions are written in SQL, with fixed lambda variable names: PySpark's Python
# lambdas get fresh names on every call, the names end up in the generated Java code, and so every
# command would compile (and JIT) its stages anew instead of finding them in Spark's code cache.


def _json_columns() -> dict[str, Column]:
    j = F.col("j")
    pairs = F.coalesce(j["fvs"], F.array().cast("array<array<string>>"))
    # every pair is two non-null strings
    bad_pair = F.expr(
        "exists(j.fvs, p -> size(p) != 2 OR get(p, 0) IS NULL OR get(p, 1) IS NULL)"
    )
    notification = j["kind"].eqNullSafe("notification")
    reason = (
        # from_json gives a struct of nulls, never null, for text that is not a JSON object
        F.when(j["ts"].isNull() & j["key"].isNull() & j["op"].isNull(), "malformed JSON")
        .when(F.col("j_ts").isNull(), "bad or missing ts")
        .when(j["db"].isNull() | j["table"].isNull() | j["key"].isNull(), "missing db, table or key")
        .when(j["kind"].isNotNull() & ~j["kind"].isin(*sorted(KINDS)), "unknown kind")
        .when(notification & j["op"].isNull(), "notification without op")
        .when(~notification & ~F.coalesce(j["op"].isin("SET", "DEL"), F.lit(False)),
              "op is neither SET nor DEL")
        .when(~notification & j["fvs"].isNull() & (j["op"] == "SET"), "SET without fvs")
        .when(bad_pair, "fvs is not a list of [field, value] pairs")
    )
    return {
        "reason": reason,
        "host": j["host"],
        "db": j["db"],
        "table": j["table"],
        "key": j["key"],
        "op": j["op"],
        "fvs": pairs,
        "ts": F.col("j_ts"),
        "seq": j["seq"],
        "dead_letter": F.coalesce(j["dead_letter"], F.lit(False)),
        "dl_reason": j["reason"],
        "kind": j["kind"],
    }


def _rec_columns(tz: str, rec_db: str | None) -> dict[str, Column]:
    table_key, tail, table, tokens = (F.col(c) for c in ("table_key", "tail", "rec_table", "tokens"))
    separator = F.substring(table_key, F.length(table) + 1, 1)
    reason = (
        F.when(~F.col("rec_ts_ok"), "no swss.rec timestamp")
        .when(F.col("local_ts").isNull(), "bad timestamp")
        .when(tail.isNull(), "no SET/DEL op token")
        .when(table == "", "no TABLE<sep>key before the op")
        .when(
            (F.size(tokens) > 0) & (F.instr(F.try_element_at(tokens, F.lit(1)), ":") == 0),
            "field without ':'",
        )
    )
    db = F.lit(rec_db) if rec_db else F.when(separator == "|", "CONFIG_DB").otherwise("APPL_DB")
    return {
        "reason": reason,
        "host": F.lit(None).cast("string"),
        "db": db,
        "table": table,
        "key": F.substring(table_key, F.length(table) + 2, 1 << 30),
        "op": F.substring_index(tail, "|", 1),
        "fvs": F.expr("transform(tokens, t -> array(substring_index(t, ':', 1), substring(t, instr(t, ':') + 1)))"),
        "ts": F.to_utc_timestamp("local_ts", tz),
        "seq": F.lit(None).cast("long"),
        "dead_letter": F.lit(False),
        "dl_reason": F.lit(None).cast("string"),
        "kind": F.lit(None).cast("string"),
    }


def read_lines(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """The raw lines with where they came from: source path, split offset, position in the split
    (as `load` numbers them; it reads the files itself, in one projection with the parsing)."""
    return spark.read.text(list(paths)).select(
        F.col("value"),
        F.col("_metadata.file_path").alias("source"),
        F.col("_metadata.file_name").alias("file_name"),
        F.col("_metadata.file_block_start").alias("block"),
        F.monotonically_increasing_id().alias("line"),
    )


def load(spark: SparkSession, opts: InputOptions) -> Inputs:
    """Classify and parse every line of the inputs; counts are observed by the first action."""
    utc_session = spark.conf.get("spark.sql.session.timeZone") in _UTC_NAMES
    base = _parse_once(spark, opts.paths, utc_session)
    is_json = F.col("is_json")

    jc = _json_columns()
    rc = _rec_columns(opts.timezone, opts.rec_db)
    parsed = base.select(
        "value", "source", "block", "line", "rotation", "file", "is_json", "is_blank", "is_marker",
        *[F.when(is_json, jc[name]).otherwise(rc[name]).alias(name) for name in jc],
    )
    line_kind = (
        F.when(F.col("is_blank"), "blank")
        .when(F.col("is_marker"), "marker")
        .when(F.col("reason").isNotNull(), "reject")
        .otherwise("event")
    )
    # computed once, apart: two columns below depend on it
    parsed = parsed.select("*", line_kind.alias("line_kind"))
    line_kind = F.col("line_kind")
    path_host = F.regexp_extract("source", opts.host_pattern, 1)
    host = (
        F.lit(opts.host)
        if opts.host
        else F.coalesce(F.col("host"), F.when(path_host != "", path_host), F.lit("unknown"))
    )
    lines = parsed.select(
        "line_kind",
        F.when(line_kind == "event", host).alias("host"),
        "db", "table", "key", "op", "fvs", "ts", "seq", "dead_letter", "dl_reason", "kind",
        "source", "reason", "value",
        F.struct(
            F.col("ts").alias("ts"),
            (-F.col("rotation")).alias("rotation"),
            F.col("file").alias("file"),
            F.col("block").alias("block"),
            F.col("line").alias("line"),
        ).alias("ord"),
    )
    observation = Observation("replay_inputs")
    lines = lines.observe(
        observation,
        F.count(F.lit(1)).alias("lines"),
        *(
            F.sum(F.when(F.col("line_kind") == kind_name, 1).otherwise(0)).alias(count_name)
            for kind_name, count_name in
            (("event", "events"), ("marker", "markers"), ("blank", "blank"), ("reject", "rejects"))
        ),
    )
    return Inputs(lines, observation)
