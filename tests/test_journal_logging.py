"""Logs under systemd: when stderr is the journal ($JOURNAL_STREAM names it), each line starts with
its syslog priority as sd-daemon(3) describes; elsewhere lines are left as they are."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent("""
    import logging, sys
    import structlog
    from swssd.ops import logs as swssd_logging

    swssd_logging.configure(sys.argv[1], "debug")
    log = structlog.get_logger("t")
    log.debug("d"); log.info("i"); log.warning("w"); log.error("e")
    try:
        1 / 0
    except ZeroDivisionError:
        log.exception("boom")
    logging.getLogger("redis").warning("from stdlib")
""")


def run(tmp_path: Path, fmt: str, journal: str | None) -> list[str]:
    """The script's stderr, to a file; JOURNAL_STREAM "match" names that file, "other" another one."""
    err = tmp_path / f"stderr-{fmt}-{journal}"
    err.touch()
    env = dict(os.environ)
    env.pop("JOURNAL_STREAM", None)
    if journal is not None:
        st = os.stat(err if journal == "match" else tmp_path)
        env["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
    with open(err, "w") as f:
        subprocess.run([sys.executable, "-c", SCRIPT, fmt], stderr=f, env=env, timeout=60, check=True)
    return err.read_text().splitlines()


@pytest.mark.parametrize("fmt", ["json", "console"])
def test_priorities_when_stderr_is_the_journal(tmp_path: Path, fmt: str) -> None:
    lines = run(tmp_path, fmt, "match")
    assert all(line[:1] == "<" and line[2:3] == ">" for line in lines), lines
    by_event = {e: next(line[:3] for line in lines if re.search(rf'"{e}"|\] {e}(\s|$)', line))
                for e in ("d", "i", "w", "e", "boom", "from stdlib")}
    assert by_event == {"d": "<7>", "i": "<6>", "w": "<4>", "e": "<3>", "boom": "<3>", "from stdlib": "<4>"}
    if fmt == "console":  # a traceback's lines keep the error priority
        assert any(line.startswith("<3>") and "ZeroDivisionError" in line for line in lines)


@pytest.mark.parametrize("journal", [None, "other"])
def test_no_prefix_elsewhere(tmp_path: Path, journal: str | None) -> None:
    lines = run(tmp_path, "json", journal)
    assert lines and not any(line.startswith("<") for line in lines), lines
