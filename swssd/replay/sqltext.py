"""SQL expression text for the replay's plans: literals and names written as the session's parser
reads them, and a query of many steps planned in one call into the JVM.

Why text, not Column objects: every Column function is a py4j call into the JVM (about 1 ms each
in a freshly started one), and the few thousand of them a plan took cost a small replay seconds;
a selectExpr of text is about one call per expression (BENCHMARKS.md, "Replay start-up").
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession

#: writes a SQL string literal (see quoting)
Quote = Callable[[str], str]


def sql_string(text: str, escapes: bool = True) -> str:
    """`text` as a SQL string literal; `escapes`: whether the parser reads backslash escapes
    (spark.sql.parser.escapedStringLiterals false, the default)."""
    if escapes:
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if "'" not in text:
        return f"'{text}'"
    if '"' not in text:
        return f'"{text}"'
    raise ValueError(f"{text!r}: cannot be written with spark.sql.parser.escapedStringLiterals on")


def quoting(spark: SparkSession) -> Quote:
    """How this session's SQL parser wants string literals written."""
    raw = str(spark.conf.get("spark.sql.parser.escapedStringLiterals", "false")).strip().lower() == "true"
    return lambda text: sql_string(text, escapes=not raw)


def quote_name(name: str) -> str:
    """A column name for SQL text (`table` and `key` are keywords)."""
    return "`" + name.replace("`", "``") + "`"


def sql_over(df: DataFrame, query: str, view: str) -> DataFrame:
    """`query` run over `df` as the temporary view `view`, dropped once the query is planned (the
    plan holds `df` itself): a query of many steps is planned in one call into the JVM."""
    df.createOrReplaceTempView(view)
    try:
        return df.sparkSession.sql(query)
    finally:
        df.sparkSession.catalog.dropTempView(view)
