"""The SparkSession replay runs in: local mode unless told otherwise, UTC, quiet."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .gateway import EarlyJVM
from .jvm import Start

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

APP_NAME = "swssd-replay"
#: Spark's logging while quiet: errors only (see the file)
QUIET_LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
_JAVA_OPTIONS = "spark.driver.extraJavaOptions"

#: PySpark logs every analysis error with a query context, JSON with the JVM's stack trace, before
#: raising it: the command prints the error's first line itself (cli.py)
_QUERY_CONTEXT_LOGGERS = ("DataFrameQueryContextLogger", "SQLQueryContextLogger")

# Spark warns with a stack trace for every glob path it checks for a streaming sink's metadata.
_NOISY_LOGGERS = (
    "org.apache.spark.sql.execution.streaming.FileStreamSink",
    "org.apache.spark.sql.execution.streaming.sinks.FileStreamSink",
)


#: the driver memory of a local replay by default: a quarter of the machine's, within these (GiB)
LOCAL_DRIVER_MEMORY_GIB = (1, 4)


def local_driver_memory() -> str:
    """A quarter of the machine's memory, at least 1g and at most 4g: Spark's own default (1g)
    ran `replay state` on 8M events out of memory; in local mode the driver is every executor."""
    low, high = LOCAL_DRIVER_MEMORY_GIB
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return f"{low}g"
    return f"{max(low, min(high, total // 4 >> 30))}g"


def session_settings(
    master: str | None = None,
    conf: dict[str, str] | None = None,
    driver_memory: str | None = None,
    verbose: bool = False,
    start: Start | None = None,
) -> dict[str, str]:
    """Every setting the session is built with, the user's `conf` last (theirs win).

    Under spark-submit (which starts Python with a gateway) the master comes from spark-submit;
    otherwise it is `master`, or `local[*]` by default. Timestamps are computed and shown in UTC.
    Unless `verbose`, Spark logs errors only, and in local mode it binds the loopback address
    (SPARK_LOCAL_IP is set for the JVM unless the environment has one: no "hostname resolves to
    a loopback address" warning, nothing listening beyond the host). `start` adds JVM options
    (see jvm.py) unless spark-submit started the JVM.
    """
    conf = dict(conf or {})
    launched_by_spark_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    settings = {"spark.app.name": APP_NAME}
    if not master and not launched_by_spark_submit:
        master = "local[*]"
    if master:
        settings["spark.master"] = master
        if master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            # Spark's 200 shuffle partitions are meant for clusters; locally they are 200 tiny
            # tasks per stage (and AQE does not coalesce a cached stage).
            settings["spark.sql.shuffle.partitions"] = str(2 * (os.cpu_count() or 2))
            # The text is read in about four tasks a core (inputs.read_groups): the default, one
            # a core, leaves a core idle while the last, larger task runs.
            settings["spark.sql.files.minPartitionNum"] = str(4 * (os.cpu_count() or 2))
    if driver_memory:
        settings["spark.driver.memory"] = driver_memory
    elif master and master.startswith("local") and "spark.driver.memory" not in conf:
        settings["spark.driver.memory"] = local_driver_memory()
    settings.update({
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
        # Past 32 input paths Spark lists them with a job of its own (a second or so of a fleet's
        # replay): a capture's files are listed faster by the driver.
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "1024",
        # The fold collects each key's events in a hash map; past 128 keys (the default) Spark
        # would sort every row of the partition by key instead. Bounded, so that a partition with
        # very many keys still falls back to the sort (which spills) rather than run out of memory.
        "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "65536",
        # A command's cache is filled once and read a few times: compressing its columns cost
        # `replay report` about 9 % of its parse and saved 8 % of the memory (BENCHMARKS.md, issue 28).
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
        # What a replay writes (rejects hold captured lines verbatim, states hold the table's
        # values) is for the user who ran it, as the capture files (0600) are: files 0600, dirs 0700.
        "spark.hadoop.fs.permissions.umask-mode": "077",
    })
    if not verbose:
        # Under spark-submit the JVM runs before any option of ours: its logging (some 700 lines
        # of INFO a command) is cut to errors when the SparkContext starts.
        settings["spark.log.level"] = "ERROR"
        quiet = f"-Dlog4j2.configurationFile={QUIET_LOG_CONFIG.as_uri()}"
        conf[_JAVA_OPTIONS] = f"{quiet} {conf.get(_JAVA_OPTIONS, '')}".strip()
    if start is not None and not launched_by_spark_submit:
        # the user's own options last, so that theirs win
        conf[_JAVA_OPTIONS] = " ".join([*start.options, conf.get(_JAVA_OPTIONS, "")]).strip()
    return {**settings, **conf}


def get_session(
    master: str | None = None,
    conf: dict[str, str] | None = None,
    driver_memory: str | None = None,
    verbose: bool = False,
    start: Start | None = None,
    early: EarlyJVM | None = None,
) -> SparkSession:
    """The active session, or a new one with `session_settings`.

    `early`: a JVM started for these settings (gateway.py), used if it came up. If a JVM this
    call starts refuses its class archive, the archive is dropped and the JVM started without it.
    """
    from pyspark import SparkContext
    from pyspark.errors import PySparkRuntimeError

    if early is not None:
        with early.connect() as connected:
            if connected:
                spark = _create(session_settings(master, conf, driver_memory, verbose, start))
                SparkContext._gateway.proc = early.proc  # type: ignore[union-attr]  # as if PySpark had launched it
                _quiet(spark, verbose)
                return spark
        # it did not come up: a JVM is started below, which drops the class archive only if that
        # JVM refuses it (a JVM killed or hung says nothing against a good archive)
    try:
        spark = _create(session_settings(master, conf, driver_memory, verbose, start))
    except PySparkRuntimeError:
        if start is None or (start.archive is None and start.dump_to is None):
            raise
        # the JVM refused to start with CDS (a damaged archive the checks did not catch, a
        # JDK without a base archive): start it without
        start.drop_cds()
        spark = _create(session_settings(master, conf, driver_memory, verbose, start))
    _quiet(spark, verbose)
    return spark


def _create(settings: dict[str, str]) -> SparkSession:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


class _RetriedSend(logging.Filter):
    """py4j logs at INFO, with a traceback, each pooled connection it finds reset and replaces
    ("Exception while sending command."), through the root logger itself (`logging.info`): the
    call is retried, nothing for the user to see, whatever the root logger lets through."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno < logging.WARNING and "py4j" in record.pathname
                    and record.getMessage() == "Exception while sending command.")


def _quiet(spark: SparkSession, verbose: bool = False) -> None:
    # its own loggers too, for the same line logged through them by other py4j versions
    for name in ("py4j", "py4j.clientserver", "py4j.java_gateway"):  # a child's own level would win
        logging.getLogger(name).setLevel(logging.WARNING)
    if not verbose:
        for name in _QUERY_CONTEXT_LOGGERS:  # PySpark's getLogger keeps a logger made before
            logging.getLogger(name).setLevel(logging.CRITICAL)
    root = logging.getLogger()
    if not any(isinstance(f, _RetriedSend) for f in root.filters):
        root.addFilter(_RetriedSend())
    try:
        jvm: Any = spark.sparkContext._jvm  # None (no JVM) fails below, skipped as any other
        level = jvm.org.apache.logging.log4j.Level.ERROR
        for name in _NOISY_LOGGERS:
            jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)
    except Exception:  # only log levels; a different logging backend is fine
        pass


@contextlib.contextmanager
def sql_conf(spark: SparkSession, settings: Mapping[str, str], given: Mapping[str, str]) -> Iterator[None]:
    """`settings` in the session's SQL conf while a command runs, but for those the user gave
    (`given`, --conf); restored after, for a program that runs more commands in the same session."""
    changed = {k: spark.conf.get(k, None) for k in settings if k not in given}
    for key in changed:
        spark.conf.set(key, settings[key])
    try:
        yield
    finally:
        for key, value in changed.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
