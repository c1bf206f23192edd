"""The replay command line without Spark: instants, the install hint, argument parsing."""

from __future__ import annotations

import io
import sys
from datetime import UTC, datetime

import pytest

from swssd.replay.cli import INSTALL_HINT, build_parser, main
from swssd.replay.timeparse import parse_instant


def us(*args: int) -> int:
    dt = datetime(*args, tzinfo=UTC)  # type: ignore[misc]
    return int(dt.timestamp()) * 1_000_000 + dt.microsecond


@pytest.mark.parametrize(
    "text, tz, expected",
    [
        ("2026-11-25T23:41:16.123456Z", "UTC", us(2026, 11, 25, 23, 41, 16, 123456)),
        ("2026-11-25T23:41:16+01:00", "UTC", us(2026, 11, 25, 22, 41, 16)),
        ("2026-11-25 23:41:16", "UTC", us(2026, 11, 25, 23, 41, 16)),
        ("2026-11-25.23:41:16.123456", "UTC", us(2026, 11, 25, 23, 41, 16, 123456)),
        ("2026-03-01.10:05:02", "Europe/Paris", us(2026, 3, 1, 9, 5, 2)),
        ("2026-07-01T10:00:00Z", "Europe/Paris", us(2026, 7, 1, 10, 0, 0)),  # explicit zone wins
    ],
)
def test_parse_instant(text: str, tz: str, expected: int) -> None:
    assert parse_instant(text, tz) == expected


@pytest.mark.parametrize("text, tz", [("yesterday", "UTC"), ("2026-11-25T23:41:16", "Mars/Olympus")])
def test_parse_instant_refuses_with_a_reason(text: str, tz: str) -> None:
    with pytest.raises(ValueError, match=r"instant|time zone"):
        parse_instant(text, tz)


def test_without_pyspark_the_command_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark -> ImportError
    assert main(["state", "captures/*"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == INSTALL_HINT and "pip install 'swssd[replay]'" in err


def test_parser_shapes() -> None:
    p = build_parser()
    a = p.parse_args(["state", "a.jsonl", "b/swss.rec*", "--as-of", "2026-01-01T00:00:00Z",
                      "--table", "PORT_TABLE", "--table", "ROUTE_*", "--conf", "spark.x=1=2"])
    assert a.inputs == ["a.jsonl", "b/swss.rec*"] and a.table == ["PORT_TABLE", "ROUTE_*"]
    assert a.conf == [("spark.x", "1=2")] and a.output == "replay-output" and a.master is None
    d = p.parse_args(["diff", "x", "--dump", "live.json"])
    assert (d.db, d.dump) == ("APPL_DB", "live.json")
    with pytest.raises(SystemExit):
        p.parse_args(["diff", "x"])  # --dump is required


def test_restore_takes_url_as_the_other_tools_and_the_old_spelling_still() -> None:
    p = build_parser()
    for option in ("--url", "--redis-url"):
        a = p.parse_args(["restore", "x", option, "unix:///tmp/r.sock", "--db-id", "3"])
        assert (a.url, a.db_id) == ("unix:///tmp/r.sock", 3)
    assert "--redis-url" not in p._subparsers._group_actions[0].choices["restore"].format_help()  # type: ignore[union-attr]


class _Exited(Exception):
    pass


class _Out(io.StringIO):
    """An output that says whether it was flushed since it was last written."""

    flushed = True

    def write(self, text: str) -> int:
        self.flushed = False
        return super().write(text)

    def flush(self) -> None:
        self.flushed = True


@pytest.mark.parametrize("status", [0, 1, 2])
def test_the_program_exits_with_mains_status_after_flushing(monkeypatch: pytest.MonkeyPatch, status: int) -> None:
    """`python -m swssd.replay` skips Python's finalization (cli.run): the status and the output
    must survive that."""
    import swssd.replay.cli as cli

    out, err = _Out(), _Out()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)

    def fake_main(argv: list[str] | None = None) -> int:
        print("result line", end="")
        print("a note", end="", file=sys.stderr)
        return status

    def fake_exit(code: int) -> None:
        assert out.flushed and err.flushed
        raise _Exited(code)

    monkeypatch.setattr(cli, "main", fake_main)
    monkeypatch.setattr(cli.os, "_exit", fake_exit)
    with pytest.raises(_Exited) as exited:
        cli.run(["state", "x"])
    assert exited.value.args == (status,)
    assert out.getvalue() == "result line" and err.getvalue() == "a note"
