"""`swssd replay ...` / `python -m swssd.replay ...`: the command line of the Spark replay job.

This module imports nothing from PySpark until a command runs, so that without the optional
extra the command explains how to install it instead of failing with a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .inputs_doc import DEFAULT_HOST_PATTERN, DEFAULT_MAX_LINE_BYTES, HOST_RULE, max_line_bytes

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .gateway import EarlyJVM
    from .jvm import Start
    from .paths import ResolvedInputs
    from .readable import InputCheck

INSTALL_HINT = (
    "swssd replay needs PySpark (and a Java 17 runtime), which the daemon does not: "
    "install them with  pip install 'swssd[replay]'"
)


DONE_EPILOG = ("exit status: 0 done, 2 bad arguments, inputs that match nothing or a Spark error "
               "(one line on stderr).")
DIFF_EPILOG = ("exit status: 0 no differences, 1 differences found, 2 bad arguments, inputs that match "
               "nothing, a bad dump or a Spark error (one line on stderr).")
RESTORE_EPILOG = ("exit status: 0 restored, 1 Redis unreachable or a Redis error, 2 bad arguments, inputs "
                  "that match nothing or a Spark error (one line on stderr).")
REPORT_EPILOG = ("exit status: 0 the report was written, 2 bad arguments, inputs that match nothing, "
                 "a Spark error or an unwritable --out (one line on stderr).")


def _conf(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, not {text!r}")
    return key, value


def _common(filters: bool = True, output: bool = True) -> argparse.ArgumentParser:
    """The options every command takes: inputs and Spark's, and (unless compact) filters and --output."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="capture files, directories or globs (JSON Lines captures and swss.rec, "
                        "rotated and .gz included, and segments written by `compact`); any path Spark reads")
    g = p.add_argument_group("inputs")
    g.add_argument("--host", help="host name for every input (default: see --host-pattern)")
    g.add_argument("--host-pattern", default=DEFAULT_HOST_PATTERN, metavar="REGEX",
                   help=HOST_RULE)
    g.add_argument("--timezone", default="UTC",
                   help="zone of swss.rec timestamps and of times given without one (default UTC)")
    g.add_argument("--rec-db", metavar="DB",
                   help="database of swss.rec lines (default: CONFIG_DB for TABLE|key, APPL_DB for TABLE:key)")
    g.add_argument("--max-line-bytes", type=max_line_bytes, default=DEFAULT_MAX_LINE_BYTES, metavar="N",
                   help="a line longer than N bytes is not read (nor held in memory): it counts as a "
                        "rejected line, with its file, line number and length (default 16777216, 16 MiB)")
    if filters:
        f = p.add_argument_group("filters")
        f.add_argument("--only-host", action="append", metavar="HOST", help="keep these hosts (glob; repeatable)")
        f.add_argument("--table", action="append", metavar="TABLE", help="keep these tables (glob; repeatable)")
        f.add_argument("--key", action="append", metavar="KEY", help="keep these keys (glob; repeatable)")
        f.add_argument("--as-of", metavar="T",
                       help="only events at or before T (ISO 8601, or swss.rec's 2026-11-25.23:41:16.123456)")
    s = p.add_argument_group("spark")
    s.add_argument("--master", help="Spark master (default: local[*], or spark-submit's)")
    s.add_argument("--master-timeout", type=float, default=20.0, metavar="SECONDS",
                   help="give up on a spark:// master whose port does not answer within SECONDS "
                        "(default 20): exit 2 at once instead of after Spark's own minute of retries")
    s.add_argument("--driver-memory",
                   help="spark.driver.memory for a local run, e.g. 8g (default: a quarter of the machine's, 1g to 4g)")
    s.add_argument("--conf", action="append", type=_conf, default=[], metavar="KEY=VALUE",
                   help="extra Spark configuration (repeatable)")
    s.add_argument("--verbose", action="store_true",
                   help="show Spark's own log lines (by default only its errors)")
    if output:
        s.add_argument("--output", default="replay-output", metavar="DIR",
                       help="where Parquet results and rejected lines go (default ./replay-output)")
    return p


def build_parser(prog: str = "swssd replay") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, epilog="exit status: each command's --help lists its own; 0 is success, 2 an error.",
        description="Replay swssd captures and swss.rec files with PySpark: table state at an "
                    "instant, history, statistics, diff against a live dump, restore; compact "
                    "captures into a segment that replays without parsing text.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = _common()

    st = sub.add_parser("state", epilog=DONE_EPILOG, parents=[common],
                        help="table contents at an instant, as Parquet")
    st.add_argument("--db", action="append", metavar="DB", help="keep these databases (repeatable)")
    st.add_argument("--show", type=int, default=0, metavar="N", help="also print the first N entries")

    hi = sub.add_parser("history", epilog=DONE_EPILOG, parents=[common],
                        help="the ordered events of matching keys")
    hi.add_argument("--db", action="append", metavar="DB", help="keep these databases (repeatable)")
    hi.add_argument("--since", metavar="T", help="only events at or after T")
    hi.add_argument("--limit", type=int, default=50, metavar="N", help="events printed (default 50)")

    sa = sub.add_parser("stats", epilog=DONE_EPILOG, parents=[common],
                        help="event counts, rates, flapping keys and notifications per op")
    sa.add_argument("--db", action="append", metavar="DB", help="keep these databases (repeatable)")
    sa.add_argument("--since", metavar="T", help="only events at or after T")
    sa.add_argument("--top", type=int, default=10, metavar="N",
                    help="flapping keys and notification ops printed (default 10)")

    di = sub.add_parser("diff", epilog=DIFF_EPILOG, parents=[common],
                        help="state at an instant against a `swssd dump` of live tables",
                        description="Compare the replayed state of one host and database with a dump of "
                                    "the live tables. Every table of the replayed state is compared: a "
                                    "table the dump lacks is empty live, so each of its entries is "
                                    "reported missing (Redis keeps no empty hash). --table limits both "
                                    "sides to the tables named.")
    di.add_argument("--dump", required=True, metavar="FILE",
                    help='JSON {"<table>": {"<key>": {"<field>": "<value>"}}} of one database')
    di.add_argument("--db", default="APPL_DB", help="database of the dump (default APPL_DB)")
    di.add_argument("--limit", type=int, default=50, metavar="N", help="differences printed (default 50)")

    re = sub.add_parser("restore", epilog=RESTORE_EPILOG, parents=[common],
                        help="write the state at an instant into Redis through temp views")
    re.add_argument("--db", default="APPL_DB", help="database to restore (default APPL_DB)")
    re.add_argument("--url", metavar="URL",
                    help="redis://host:port or unix:///path, as the other swssd tools take it "
                         "(default: --db in database_config.json)")
    # the spelling of earlier versions
    re.add_argument("--redis-url", dest="url", metavar="URL", help=argparse.SUPPRESS)
    re.add_argument("--db-id", type=int, help="database number with --url")
    re.add_argument("--separator", choices=[":", "|"],
                    help="key separator with --url (default by database name)")
    re.add_argument("--db-config", metavar="PATH", help="database_config.json to find --db in")

    rp = sub.add_parser(
        "report", parents=[common],
        help="one self-contained HTML page: changes over time per table and host, the most changed "
             "and flapping keys with their histories, the timeline around an instant, the input summary",
        description="Write one self-contained HTML report (plotly, inlined: nothing is fetched when it "
                    "is opened) of the events the filters keep: changes over time per table (and per "
                    "host), the most changed and the flapping keys, each with its history, every change "
                    "around --around, and what was read. The per-table and per-key figures also go to "
                    "--output as Parquet (report/tables, report/keys).",
        epilog=REPORT_EPILOG,
    )
    rp.add_argument("--out", required=True, metavar="FILE", help="the HTML file to write (replaced)")
    rp.add_argument("--db", action="append", metavar="DB", help="keep these databases (repeatable)")
    rp.add_argument("--since", metavar="T", help="only events at or after T")
    rp.add_argument("--until", dest="as_of", metavar="T", help="only events at or before T (as --as-of)")
    rp.add_argument("--around", metavar="T", help="also list every change on every host around T")
    rp.add_argument("--window", default="1s", metavar="D",
                    help="half-width of the --around window: 2s, 500ms, 1m, 250us (default 1s)")
    rp.add_argument("--top", type=int, default=15, metavar="N",
                    help="most changed and flapping keys shown (default 15)")

    co = sub.add_parser("compact", epilog=DONE_EPILOG, parents=[_common(filters=False, output=False)],
                        help="read the inputs once into a columnar capture segment (Parquet) that "
                             "the other commands read without parsing text")
    co.add_argument("--out", required=True, metavar="DIR",
                    help="the segment's directory (new, empty, or a segment to replace); local")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one replay sub-command; returns the exit status (1: diff found differences, 2: error)."""
    args = build_parser().parse_args(argv)
    if importlib.util.find_spec("pyspark") is None:
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    if args.command == "report":
        problem = _report_problem(args)
        if problem:
            print(f"swssd replay: {problem}", file=sys.stderr)
            return 2
    from .paths import NoInputError, resolve_inputs

    try:
        resolved = resolve_inputs(args.inputs)
    except NoInputError as exc:
        print(f"swssd replay: {exc}", file=sys.stderr)
        return 2
    from .master import unreachable

    problem = unreachable(args.master, args.master_timeout)
    if problem:
        print(f"swssd replay: {problem}", file=sys.stderr)
        return 2
    from .readable import InputCheck

    input_check = InputCheck(resolved.paths, args.max_line_bytes)  # while the JVM starts
    early = _start_jvm(args, resolved.paths) if not resolved.segments else None
    try:
        return _run(args, resolved, early, input_check)
    finally:
        input_check.close()
        if early is not None and not early[0].used:
            early[0].stop()  # an error before the session started: its JVM ends here
            early[1].release()


def _report_problem(args: argparse.Namespace) -> str | None:
    """What makes `report` fail for sure, found before Spark starts (a one-line error, exit 2)."""
    from .timeparse import parse_duration, parse_instant

    if importlib.util.find_spec("plotly") is None:
        return "swssd replay report needs plotly: install it with  pip install 'swssd[replay]'"
    out = Path(args.out)
    if out.is_dir():
        return f"--out {out}: is a directory; name the HTML file to write"
    try:
        window = parse_duration(args.window)
        for name in ("around", "since", "as_of"):
            if getattr(args, name, None):
                parse_instant(getattr(args, name), args.timezone)
    except ValueError as exc:
        return str(exc)
    if window <= 0:
        return f"--window {args.window}: must be longer than zero"
    if args.top < 0:
        return f"--top {args.top}: must be zero or more"
    return None


def _run(
    args: argparse.Namespace, resolved: ResolvedInputs, early: tuple[EarlyJVM, Start] | None, input_check: InputCheck
) -> int:
    """main() once the JVM may be starting: PySpark imported, the inputs checked, the command run."""
    from py4j.protocol import Py4JError
    from pyspark.errors import AnalysisException, PySparkException

    from .commands import COMMANDS, UsageError, input_options
    from .jit import C1_INPUT_BYTES
    from .jvm import SMALL_SQL_CONF, is_small
    from .progress import Progress
    from .segment import SegmentError, check_options, check_out, check_sources, open_segment, source_bytes
    from .session import sql_conf

    try:
        args.segments = [open_segment(path) for path in resolved.segments]
        for segment in args.segments:
            check_options(segment, input_options(args))
        check_sources(resolved.paths, args.segments)
        if args.command == "compact":
            check_out(Path(args.out), resolved.paths, args.segments)
    except SegmentError as exc:
        print(f"swssd replay: {exc}", file=sys.stderr)
        return 2
    for note in resolved.notes():
        print(f"swssd replay: {note}", file=sys.stderr)
    # a segment weighs what its sources did: the settings are chosen as if they were given
    segment_bytes = source_bytes(args.segments)
    conf = dict(args.conf)
    # The session starts while the `.gz` files are checked (some 5 s of 8M events' start): what
    # the check finds changes no setting of the JVM, which _start_jvm chose from the same paths.
    args.inputs = list(resolved.paths)
    try:
        spark, start = _session(args, conf, is_small(args.inputs, C1_INPUT_BYTES, segment_bytes),
                                _warm_up_texts(args), early)
    except (Py4JError, PySparkException) as exc:
        print(f"swssd replay: {_spark_error(exc, args.master)}", file=sys.stderr)
        return 2
    try:
        _take_check(args, resolved.paths, input_check)
        small = is_small(args.inputs, segment_bytes=segment_bytes)
        with Progress(spark), sql_conf(spark, SMALL_SQL_CONF if small else {}, conf):
            return COMMANDS[args.command](spark, args)
    except (UsageError, ValueError) as exc:
        print(f"swssd replay: {exc}", file=sys.stderr)
        return 2
    except AnalysisException as exc:
        print(f"swssd replay: {_first_line(exc)}", file=sys.stderr)
        return 2
    except (Py4JError, PySparkException) as exc:
        print(f"swssd replay: {_spark_error(exc, args.master)}", file=sys.stderr)
        return 2
    finally:
        if start is not None and start.dump_to is not None:
            _stop_and_keep_archive(spark, start)


def _take_check(args: argparse.Namespace, paths: Sequence[str], input_check: InputCheck) -> None:
    """What the check of the inputs found, into `args` (waits for the `.gz` files): the damaged
    files noted, left out or read from their readable copies."""
    args.unreadable = input_check.unreadable()
    args.long_lines = input_check.long_lines  # found while Spark reads
    args.line_kinds = input_check.line_kinds  # waited for when the inputs are planned
    for path, why in sorted(args.unreadable.items()):
        print(f"swssd replay: note: {path}: {why}; left out, counted as a rejected file", file=sys.stderr)
    args.cuts = input_check.cuts()
    for path, cut in sorted(args.cuts.items()):
        print(f"swssd replay: note: {path}: {cut.reason()}; counted as a rejected line", file=sys.stderr)
    args.inputs = [args.cuts[p].copy if p in args.cuts else p for p in paths if p not in args.unreadable]


def run(argv: Sequence[str] | None = None) -> NoReturn:
    """`main` as a program (`python -m swssd.replay`): its exit status, without Python's
    finalization, which took some 0.6 s of a 2-event replay (BENCHMARKS.md) while nothing is left
    to do: the JVM exits on its own once this process's end closes its stdin, and any archive is
    in the keeper's hands. Output is flushed first."""
    code = main(argv)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: the status still tells
        code = code or 1
    os._exit(code)


def _start_jvm(args: argparse.Namespace, paths: Sequence[str]) -> tuple[EarlyJVM, Start] | None:
    """The session's JVM, started before PySpark is imported (gateway.py): it boots while this
    process imports PySpark and plans the command (some 0.7 s of a small replay). None when a JVM
    is running already or cannot be started this way (then the session starts one)."""
    if _jvm_running():
        return None
    from .gateway import EarlyJVM
    from .jit import C1_INPUT_BYTES
    from .jvm import is_small, plan
    from .session import session_settings

    conf = dict(args.conf)
    start = plan(is_small(paths, C1_INPUT_BYTES), conf.get("spark.driver.extraJavaOptions", ""))
    early = EarlyJVM.start(session_settings(args.master, conf, args.driver_memory, args.verbose, start))
    return None if early is None else (early, start)


def _jvm_running() -> bool:
    """spark-submit's JVM, or a session of the calling program (its options stay as they are)."""
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return True
    pyspark = sys.modules.get("pyspark")  # not imported: no session in this process
    return pyspark is not None and pyspark.SparkContext._gateway is not None


def _session(args: argparse.Namespace, conf: dict[str, str], c1: bool, warm_up: list[str] | None = None,
             early: tuple[EarlyJVM, Start] | None = None) -> tuple[SparkSession, Start | None]:
    """The session, and how its JVM was started when this call (or _start_jvm) started it (jvm.py);
    a JVM started here parses `warm_up` in a second thread while the session starts (_warm_up)."""
    from .jvm import plan
    from .master import driver_warning
    from .session import get_session

    launches = not _jvm_running()
    jvm: EarlyJVM | None = None
    start: Start | None = None
    if early is not None:
        jvm, start = early
    elif launches:
        start = plan(c1, conf.get("spark.driver.extraJavaOptions", ""))
    done = threading.Event()
    if launches and warm_up:
        threading.Thread(target=_warm_up, args=(warm_up, done), name="swssd-replay-warm-up", daemon=True).start()
    try:
        spark = get_session(args.master, conf, args.driver_memory, verbose=args.verbose, start=start, early=jvm)
    finally:
        done.set()
    warning = driver_warning(spark.sparkContext.master, spark.conf.get("spark.driver.host", None))
    if warning:
        print(f"swssd replay: {warning}", file=sys.stderr)
    return spark, start


def _warm_up_texts(args: argparse.Namespace) -> list[str]:
    """The projections of the input parsing (inputs.plan_texts) as `load` will build them, as
    queries (unless the session's conf says otherwise; then the warm-up is only less exact)."""
    from .commands import input_options
    from .inputs import FORMAT_FILTERS, plan_texts

    opts = input_options(args)
    if not opts.paths:  # segments only: no text to parse
        return []
    try:
        return [f"SELECT {', '.join(projection)} FROM t"
                for fmt in FORMAT_FILTERS for projection in plan_texts(opts, fmt)]
    except ValueError:
        return []


def _warm_up(texts: list[str], done: threading.Event) -> None:
    """Parse `texts` (queries) with Spark's SQL parser as soon as the JVM is up, while the main thread
    waits for the SparkContext and SparkSession to start (some 2 s of mostly one core).

    Why: the first expressions a fresh JVM parses cost about a second (ANTLR's grammar and its
    prediction cache built on first use, class loading); that cache is shared by every parser,
    so the command's own plan finds it ready. Only the parser is used (no session state), each
    text is parsed and dropped, and any failure only means no warm-up."""
    from pyspark import SparkContext

    while not done.is_set() and SparkContext._jvm is None:
        done.wait(0.02)
    jvm = SparkContext._jvm
    if jvm is None:
        return
    try:
        parser = jvm.org.apache.spark.sql.execution.SparkSqlParser()
        for text in texts:
            parser.parsePlan(text)
    except Exception:  # a warm-up: the command parses (and reports) for real
        return


def _stop_and_keep_archive(spark: SparkSession, start: Start) -> None:
    """The command's JVM writes its class archive as it exits: stop it now, and keep the archive.

    Where it can (jvm.hand_off), the command does not wait: the JVM's stdout and stderr go to
    /dev/null, a detached keeper takes the archive once the JVM is gone, and the command returns
    while the JVM writes it. Otherwise it waits for the JVM (jvm.finish)."""
    from pyspark import SparkContext

    from .jvm import finish, hand_off

    sys.stdout.flush()
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    spark.stop()
    if proc is not None and start.dump_to is not None and _detach_output(gateway) and hand_off(start, proc.pid):
        print(f"swssd replay: saving the JVM's class archive in {start.dump_to.parent} for faster starts "
              "(once, in the background)", file=sys.stderr, flush=True)
        if proc.stdin is not None:
            proc.stdin.close()  # the JVM exits: it writes the archive on its own
    else:
        finish(start, proc)
    if proc is not None and (proc.poll() is not None or proc.stdin is None or proc.stdin.closed):
        # the JVM is gone or going: a later session in this process launches a new one
        SparkContext._gateway = None
        SparkContext._jvm = None


def _detach_output(gateway: Any) -> bool:
    """The JVM's stdout and stderr to /dev/null (Java's close of System.out/err redirects the file
    descriptors there), so that it holds no pipe of the caller open while it writes the archive."""
    try:
        system = gateway.jvm.java.lang.System
        system.out.flush()
        system.err.flush()
        system.out.close()
        system.err.close()
    except Exception:  # py4j or Java: then the command waits, as without a keeper
        return False
    return True


def _spark_error(exc: BaseException, master: str | None) -> str:
    """One line for a failure inside Spark: the Java exception's own first line where there is one
    (py4j's first line only names the call), and the master when one was given."""
    from py4j.protocol import Py4JJavaError

    text = _first_line(exc)
    if isinstance(exc, Py4JJavaError):
        with contextlib.suppress(Exception):  # the JVM is gone: py4j's own line
            text = _first_line(Exception(exc.java_exception.toString()))
    where = f" (master {master})" if master else ""
    return f"Spark error{where}: {text}"


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
