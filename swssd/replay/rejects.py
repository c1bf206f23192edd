"""The rejected lines written to disk, bounded: a few hundred bytes of gzip can hold millions of
lines that are all rejected (629 bytes of `x` lines wrote 36 MB of rejects, a 1 MB one would have
written some 50 GB), so what is written is the first PER_FILE rejects of each input file and
TOTAL_BYTES in all (about: a row's source, reason and value and the JSON around them); the rest
is counted, not written, and the summary says so.

"First" is in the order Spark read the lines (a file's splits in order of their offsets); files
take their share of TOTAL_BYTES in the order of their names.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from .inputs import REJECT_COLUMNS

#: rejected lines of one input file written at most
PER_FILE = 10_000
#: bytes of rejected lines written at most, in all
TOTAL_BYTES = 64 << 20
#: what JSON adds to a row beside its three strings (keys, quotes, braces, line end)
_ROW_OVERHEAD = 40


def bounded(rejects: DataFrame, per_file: int = PER_FILE, total_bytes: int = TOTAL_BYTES) -> tuple[
        DataFrame, Observation]:
    """`rejects` cut to the bounds, and an Observation that gives the rows written (`written`)
    once the result has been written."""
    size = f"(octet_length(source) + octet_length(reason) + octet_length(value) + {_ROW_OVERHEAD})"
    ranked = rejects.selectExpr("*", "monotonically_increasing_id() AS _n", f"{size} AS _bytes").selectExpr(
        "*",
        "row_number() OVER (PARTITION BY source ORDER BY _n) AS _rank",
        "sum(_bytes) OVER (PARTITION BY source ORDER BY _n ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
        " AS _upto",
    ).where(f"_rank <= {int(per_file)} AND _upto <= {int(total_bytes)}")
    files = ranked.groupBy("source").agg(F.max("_upto").alias("_file_bytes")).selectExpr(
        "source",
        "coalesce(sum(_file_bytes) OVER (ORDER BY source ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)"
        " AS _before",
    )
    kept = ranked.join(F.broadcast(files), "source").where(f"_before + _upto <= {int(total_bytes)}")
    observation = Observation("replay_rejects_written")
    return kept.select(*REJECT_COLUMNS).observe(observation, F.expr("count(1) AS written")), observation


def bound_note(rejected: int, written: int) -> str:
    """What the summary adds when some rejected lines were not written."""
    if written >= rejected:
        return ""
    return (f"; {rejected - written} of them not written: the rejects keep the first {PER_FILE:,} of each "
            f"input file and {TOTAL_BYTES >> 20} MiB in all")
