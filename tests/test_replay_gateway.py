"""The replay's JVM started before PySpark is imported (swssd/replay/gateway.py): the session
uses it when it came up, and starts one the usual way when it did not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from swssd.replay.gateway import EarlyJVM, relay, spark_home


def _fake(tmp_path: Path, command: list[str]) -> EarlyJVM:
    info = tmp_path / "info"
    info.mkdir()
    return EarlyJVM(subprocess.Popen(command, stdin=subprocess.PIPE), info)


def test_spark_home_is_found_without_importing_pyspark() -> None:
    probe = "import sys; from swssd.replay.gateway import spark_home; h = spark_home(); " \
            "print((h / 'bin' / 'spark-submit').is_file(), 'pyspark' in sys.modules)"
    env = {k: v for k, v in os.environ.items() if k != "SPARK_HOME"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["True", "False"]
    assert spark_home() is not None


def test_a_jvm_that_exits_first_is_not_used(tmp_path: Path) -> None:
    early = _fake(tmp_path, ["false"])
    with early.connect(timeout=30) as connected:
        assert connected is False
        assert "PYSPARK_GATEWAY_PORT" not in os.environ
    assert early.proc.returncode == 1


def test_a_jvm_that_never_answers_is_stopped_after_the_time_out(tmp_path: Path) -> None:
    early = _fake(tmp_path, ["cat"])  # alive until its stdin closes, as the gateway JVM is
    with early.connect(timeout=0.3) as connected:
        assert connected is False
    assert early.proc.returncode == 0  # ended by closing its stdin, not killed


def test_the_gateway_is_given_to_pyspark_only_inside_connect(tmp_path: Path) -> None:
    early = _fake(tmp_path, ["cat"])
    secret = "s3cret-ü"
    data = (4711).to_bytes(4, "big") + len(secret.encode()).to_bytes(4, "big") + secret.encode()
    (tmp_path / "info" / "conn-info").write_bytes(data)
    with early.connect(timeout=5) as connected:
        assert connected is True
        assert os.environ["PYSPARK_GATEWAY_PORT"] == "4711"
        assert os.environ["PYSPARK_GATEWAY_SECRET"] == secret
    assert "PYSPARK_GATEWAY_PORT" not in os.environ and "PYSPARK_GATEWAY_SECRET" not in os.environ
    early.stop()
    assert early.proc.returncode == 0


SESSION = textwrap.dedent("""
    import os, sys
    from swssd.replay.gateway import EarlyJVM
    from swssd.replay.session import get_session, session_settings

    settings = session_settings(conf={"spark.swssd.probe": "yes"})
    early = EarlyJVM.start(settings)
    assert early is not None and "pyspark" not in sys.modules
    if sys.argv[1] == "dead":
        early.proc.kill()
    spark = get_session(conf={"spark.swssd.probe": "yes"}, early=early)
    proc = spark.sparkContext._gateway.proc
    print(spark.range(5).count(), spark.conf.get("spark.swssd.probe"), spark.conf.get("spark.sql.session.timeZone"),
          proc is early.proc, "PYSPARK_GATEWAY_PORT" in os.environ)
    spark.stop()
""")


@pytest.mark.parametrize("jvm", ["early", "dead"])
def test_a_session_uses_the_early_jvm_or_starts_its_own(jvm: str) -> None:
    proc = subprocess.run([sys.executable, "-c", SESSION, jvm], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    count, probe, zone, same, leaked = proc.stdout.split()
    assert (count, probe, zone, leaked) == ("5", "yes", "UTC", "False")
    assert same == ("True" if jvm == "early" else "False")


COMMAND = textwrap.dedent("""
    import json, sys
    import swssd.replay.gateway as gateway
    from swssd.replay.cli import main

    started = []
    original = gateway.EarlyJVM.start.__func__

    def start(cls, settings):
        jvm = original(cls, settings)
        started.append((jvm, "pyspark" in sys.modules))
        return jvm

    gateway.EarlyJVM.start = classmethod(start)
    code = main(sys.argv[1:])
    jvm, pyspark_imported = started[0] if started else (None, None)
    print(json.dumps({"code": code, "started": len(started), "pyspark_before": pyspark_imported,
                      "used": jvm is not None and jvm.used,
                      "ended": jvm is not None and jvm.proc.poll() is not None}))
""")


def _command(*argv: str) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", COMMAND, *argv], capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_the_command_starts_its_jvm_before_pyspark_and_uses_it(tmp_path: Path) -> None:
    capture = tmp_path / "capture.jsonl"
    capture.write_text('{"ts":"2026-11-25T00:00:00.000001Z","db":"APPL_DB","table":"PORT_TABLE",'
                       '"key":"Ethernet0","op":"SET","fvs":[["mtu","9100"]]}\n')
    got = _command("state", str(capture), "--out", str(tmp_path / "out"))
    assert got == {"code": 0, "started": 1, "pyspark_before": False, "used": True, "ended": False}
    assert (tmp_path / "out" / "state").is_dir()


def test_an_error_before_the_session_ends_the_early_jvm(tmp_path: Path) -> None:
    capture = tmp_path / "capture.jsonl"
    capture.write_text("{}\n")
    (tmp_path / "out").write_text("a file where compact's directory goes")
    got = _command("compact", str(capture), "--out", str(tmp_path / "out"))
    assert got == {"code": 2, "started": 1, "pyspark_before": False, "used": False, "ended": True}
    assert _command("state", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o"))["started"] == 0


def test_the_relay_leaves_out_only_the_known_lines(tmp_path: Path) -> None:
    lines = [b"first\n", b"WARNING: Using incubator modules: jdk.incubator.vector\n", b"WARNING: something else\n",
             b"WARNING: Using incubator modules: jdk.incubator.vector and more\n", b"3 compiler directives added\n",
             b"Parsing of compiler directives failed\n", b"3 compiler directives added, then\n", b"no end"]
    source = tmp_path / "jvm-stderr"
    source.write_bytes(b"".join(lines))
    with source.open("rb") as f, (tmp_path / "ours").open("wb") as sink:
        relay(f, sink.fileno())
    assert (tmp_path / "ours").read_bytes() == b"".join(lines[:1] + lines[2:4] + lines[5:])


def test_a_replay_does_not_show_the_incubator_warning_but_keeps_the_jvms_other_lines(tmp_path: Path) -> None:
    """The command's own JVM: its start-up line about jdk.incubator.vector is left out, and an
    -Xlog line it writes to stderr still reaches the user."""
    capture = tmp_path / "sw1" / "swssd.capture.jsonl"
    capture.parent.mkdir()
    capture.write_text('{"ts":"2026-11-25T00:00:00.000001Z","db":"APPL_DB","table":"PORT_TABLE",'
                       '"key":"Ethernet0","op":"SET","fvs":[["mtu","9100"]]}\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "swssd.replay", "stats", str(capture), "--output", str(tmp_path / "out"),
         "--conf", "spark.driver.extraJavaOptions=-Xlog:gc=info:stderr"],
        capture_output=True, text=True, timeout=300,
        env={**env, "SWSSD_REPLAY_CDS": "0", "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "incubator" not in proc.stderr, proc.stderr
    assert "[gc] Using " in proc.stderr, proc.stderr
