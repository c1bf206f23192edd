"""The replay's JVM started before PySpark is imported (swssd/replay/gateway.py): the session
uses it when it came up, and starts one the usual way when it did not."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from swssd.replay.gateway import EarlyJVM, spark_home  # noqa: E402


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
