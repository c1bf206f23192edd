"""The SparkSession replay runs in: local mode unless told otherwise, UTC, quiet."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

from .jvm import Start

APP_NAME = "swssd-replay"
#: Spark's logging while quiet: errors only (see the file)
QUIET_LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
_JAVA_OPTIONS = "spark.driver.extraJavaOptions"

# Spark warns with a stack trace for every glob path it checks for a streaming sink's metadata.
_NOISY_LOGGERS = (
    "org.apache.spark.sql.execution.streaming.FileStreamSink",
    "org.apache.spark.sql.execution.streaming.sinks.FileStreamSink",
)


def get_session(
    master: str | None = None,
    conf: dict[str, str] | None = None,
    driver_memory: str | None = None,
    verbose: bool = False,
    start: Start | None = None,
) -> SparkSession:
    """The active session, or a new one.

    Under spark-submit (which starts Python with a gateway) the master comes from spark-submit;
    otherwise it is `master`, or `local[*]` by default. Timestamps are computed and shown in UTC.
    Unless `verbose`, Spark logs errors only, and in local mode it binds the loopback address
    (no "hostname resolves to a loopback address" warning, nothing listening beyond the host).
    `start` adds JVM options when this call launches the JVM (see jvm.py); if the JVM does not
    start with its class archive, the archive is dropped and the JVM started without it.
    """
    conf = dict(conf or {})
    builder = SparkSession.builder.appName(APP_NAME)
    launched_by_spark_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    if not master and not launched_by_spark_submit:
        master = "local[*]"
    if master:
        builder = builder.master(master)
        if master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            # Spark's 200 shuffle partitions are meant for clusters; locally they are 200 tiny
            # tasks per stage (and AQE does not coalesce a cached stage).
            builder = builder.config("spark.sql.shuffle.partitions", str(2 * (os.cpu_count() or 2)))
    if driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    builder = (
        builder.config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.optimizer.canChangeCachedPlanOutputPartitioning", "true")
        # The fold collects each key's events in a hash map; past 128 keys (the default) Spark
        # would sort every row of the partition by key instead. Bounded, so that a partition with
        # very many keys still falls back to the sort (which spills) rather than run out of memory.
        .config("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", "65536")
    )
    if not verbose:
        quiet = f"-Dlog4j2.configurationFile={QUIET_LOG_CONFIG.as_uri()}"
        conf[_JAVA_OPTIONS] = f"{quiet} {conf.get(_JAVA_OPTIONS, '')}".strip()
    if start is None or launched_by_spark_submit:
        spark = _create(builder, conf)
    else:
        try:
            spark = _create(builder, _with_java_options(conf, start.options))
        except PySparkRuntimeError:
            if start.archive is None and start.dump_to is None:
                raise
            # the JVM refused to start with CDS (a damaged archive the checks did not catch, a
            # JDK without a base archive): start it without
            start.drop_cds()
            spark = _create(builder, _with_java_options(conf, start.options))
    _quiet(spark)
    return spark


def _with_java_options(conf: dict[str, str], options: list[str]) -> dict[str, str]:
    """The user's own options last, so that theirs win."""
    out = dict(conf)
    out[_JAVA_OPTIONS] = " ".join([*options, conf.get(_JAVA_OPTIONS, "")]).strip()
    return out


def _create(builder: SparkSession.Builder, conf: dict[str, str]) -> SparkSession:
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _quiet(spark: SparkSession) -> None:
    try:
        jvm: Any = spark.sparkContext._jvm  # None (no JVM) fails below, skipped as any other
        level = jvm.org.apache.logging.log4j.Level.ERROR
        for name in _NOISY_LOGGERS:
            jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)
    except Exception:  # only log levels; a different logging backend is fine
        pass
