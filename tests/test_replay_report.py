"""`swssd replay report`: its figures against a plain-Python fold of the same files, and the page as
a person sees it, in headless Chromium.

The captures are generated: three hosts, two writing swssd JSON Lines (rotated, the oldest
gzipped; subscriber tables, notifications, dead letters, equal timestamps within a batch) and
one writing swss.rec (rotated and gzipped, with 'recording started' markers), each with rejected
lines. The fold below reads them the simple way and counts what overview.py's docstring defines.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import random
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("plotly")

from pyspark.sql import SparkSession

from browser import chromium
from fixtures.spark_session import SPARK_ARGS, spark  # noqa: F401 - spark is a fixture
from swssd.replay.cli import main

START = 1_795_651_200_000_000  # 2026-11-26T00:00:00Z
REC_TABLES = ["PORT_TABLE", "ROUTE_TABLE", "NEIGH_TABLE"]


def iso(us: int) -> str:
    from swssd.replay.page import iso as page_iso

    return page_iso(us)


def rec_ts(us: int) -> str:
    return iso(us)[:26].replace("T", ".")


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(line + "\n" for line in lines).encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)


def _split(lines: list[str], parts: int) -> list[list[str]]:
    size = -(-len(lines) // parts)
    return [lines[i * size:(i + 1) * size] for i in range(parts)]


def _value(rng: random.Random, field: str) -> str:
    if field == "admin_status":
        return rng.choice(["up", "down"])  # goes back and forth
    if field == "mtu":
        return rng.choice(["1500", "9100"])
    return f"v{rng.randrange(1000)}"


def generate(root: Path, seed: int = 3, events_per_host: int = 400) -> Path:
    """captures/<host>/...: sw1 and sw2 JSON Lines (3 files, the oldest .gz), sw3 swss.rec (3 files)."""
    rng = random.Random(seed)
    for host in ("sw1", "sw2"):
        lines: list[str] = []
        us = START + rng.randrange(1_000_000)
        for seq in range(1, events_per_host + 1):
            if seq % 4 == 1:  # four records a pop: equal timestamps, file order decides
                us += rng.randrange(1, 400_000)
            roll = rng.random()
            rec: dict[str, Any]
            if roll < 0.08:
                rec = {"db": "APPL_DB", "table": "NOTIFICATIONS", "key": "[]", "kind": "notification",
                       "op": rng.choice(["port_state_change", "fdb_event"]), "fvs": [["x", str(seq)]]}
            else:
                table, db, kind = rng.choice([("PORT_TABLE", "APPL_DB", None), ("ROUTE_TABLE", "APPL_DB", "state"),
                                              ("PORT", "CONFIG_DB", "subscriber")])
                key = f"Ethernet{rng.randrange(6) * 4}" if "PORT" in table else f"10.{rng.randrange(5)}.0.0/24"
                if rng.random() < 0.2:
                    rec = {"db": db, "table": table, "key": key, "op": "DEL", "fvs": []}
                else:
                    fields = rng.sample(["admin_status", "mtu", "alias"], rng.randint(1, 3))
                    rec = {"db": db, "table": table, "key": key, "op": "SET",
                           "fvs": [[f, _value(rng, f)] for f in fields]}
                if kind:
                    rec["kind"] = kind
            if rng.random() < 0.03:
                rec |= {"dead_letter": True, "reason": "handler failed"}
            lines.append(json.dumps({"ts": iso(us), "host": host, **rec, "seq": seq}))
            if seq % 97 == 0:
                lines.append('{"ts": "2026-11-25T00:00:00Z", "broken')  # malformed JSON
            if seq % 151 == 0:
                lines.append(json.dumps({"ts": iso(us), "host": host, "db": "APPL_DB", "table": "PORT_TABLE",
                                         "key": "Ethernet0", "op": "PATCH", "fvs": []}))
        old, mid, live = _split(lines, 3)
        _write(root / host / "swssd.capture.jsonl.2.gz", old)
        _write(root / host / "swssd.capture.jsonl.1", mid)
        _write(root / host / "swssd.capture.jsonl", live)
    lines = [f"{rec_ts(START)}|recording started"]
    us = START + 300_000
    for i in range(events_per_host):
        if i % 3 == 0:
            us += rng.randrange(1, 300_000)
        table = rng.choice(REC_TABLES)
        key = f"Ethernet{rng.randrange(5) * 4}" if table == "PORT_TABLE" else f"k{rng.randrange(6)}"
        if rng.random() < 0.2:
            lines.append(f"{rec_ts(us)}|{table}:{key}|DEL")
        else:
            fields = rng.sample(["admin_status", "mtu", "alias"], rng.randint(1, 3))
            lines.append(f"{rec_ts(us)}|{table}:{key}|SET|" + "|".join(f"{f}:{_value(rng, f)}" for f in fields))
        if i % 120 == 60:
            lines.append(f"{rec_ts(us)}|PORT_TABLE:Ethernet0|GET|mtu:1")  # no SET/DEL op
            lines.append("core dumped while writ")
    old, mid, live = _split(lines, 3)
    _write(root / "sw3" / "swss.rec.2.gz", old)
    _write(root / "sw3" / "swss.rec.1.gz", [f"{rec_ts(us)}|recording started", *mid])
    _write(root / "sw3" / "swss.rec", live)
    return root


# -- the independent fold --------------------------------------------------------------------

_REC = re.compile(r"^(\d{4}-\d\d-\d\d)\.(\d\d:\d\d:\d\d\.\d{6})\|([^:|]+)([:|])(.*?)\|(SET|DEL)((?:\|.*)?)$")


def _us(text: str) -> int:
    from datetime import datetime

    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(dt.timestamp()) * 1_000_000 + dt.microsecond


def read_events(root: Path, hosts: list[str] | None = None) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Every event of the generated files in replay order (time, then older files first, then
    line order), and the line counts; each file's lines read the obvious way."""
    counts: Counter[str] = Counter()
    events = []
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        host = path.parent.name
        rotation = int(m.group(1)) if (m := re.search(r"\.(\d+)(\.gz)?$", path.name)) else 0
        text = (gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()).decode()
        for n, line in enumerate(text.splitlines()):
            counts["lines"] += 1
            ev: dict[str, Any] | None = None
            if line.startswith("{"):
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    r = None
                if r and (r.get("op") in ("SET", "DEL") or r.get("kind") == "notification"):
                    ev = {"us": _us(r["ts"]), "host": r["host"], "db": r["db"], "table": r["table"],
                          "key": r["key"], "op": r["op"], "kind": r.get("kind") or "state",
                          "dead": bool(r.get("dead_letter")), "fvs": [tuple(p) for p in r["fvs"]]}
            elif line.endswith("|recording started"):
                counts["markers"] += 1
                continue
            elif m := _REC.match(line):
                day, clock, table, sep, key, op, rest = m.groups()
                fvs = [tuple(t.split(":", 1)) for t in rest[1:].split("|")] if rest else []
                ev = {"us": _us(f"{day}T{clock}Z"), "host": host, "db": "CONFIG_DB" if sep == "|" else "APPL_DB",
                      "table": table, "key": key, "op": op, "kind": "state", "dead": False, "fvs": fvs}
            if ev is None:
                counts["rejects"] += 1
                continue
            counts["events"] += 1
            ev["order"] = (ev["us"], -rotation, str(path), n)
            events.append(ev)
    events.sort(key=lambda e: e["order"])
    return [e for e in events if hosts is None or e["host"] in hosts], counts


def fold_figures(events: list[dict[str, Any]]) -> tuple[dict[tuple[str, ...], tuple[int, ...]],
                                                       dict[tuple[str, ...], tuple[int, ...]]]:
    """Per table (events, SET, DEL, notifications, dead letters, keys) and per key (events, SET,
    DEL, dead letters, alternations, reversions, flaps), as overview.py defines them."""
    tables: dict[tuple[str, ...], list[Any]] = {}
    keys: dict[tuple[str, ...], list[int]] = {}
    last_live_op: dict[tuple[str, ...], str] = {}
    values: dict[tuple[str, ...], list[str]] = {}
    for e in events:
        t = tables.setdefault((e["host"], e["db"], e["table"]), [0, 0, 0, 0, 0, set()])
        note = e["kind"] == "notification"
        t[0] += 1
        t[1] += not note and e["op"] == "SET"
        t[2] += not note and e["op"] == "DEL"
        t[3] += note
        t[4] += e["dead"]
        t[5].add(e["key"])
        if note:
            continue
        k = (e["host"], e["db"], e["table"], e["key"])
        f = keys.setdefault(k, [0, 0, 0, 0, 0, 0])
        f[0] += 1
        f[1] += e["op"] == "SET"
        f[2] += e["op"] == "DEL"
        f[3] += e["dead"]
        if e["dead"]:
            continue
        if k in last_live_op and last_live_op[k] != e["op"]:
            f[4] += 1
        last_live_op[k] = e["op"]
        for field, value in e["fvs"] if e["op"] == "SET" else ():
            seq = values.setdefault((*k, field), [])
            if seq and seq[-1] == value:
                continue
            if len(seq) >= 2 and seq[-2] == value:
                f[5] += 1
            seq.append(value)
    return ({k: (*v[:5], len(v[5])) for k, v in tables.items()},
            {k: (*v, v[4] + v[5]) for k, v in keys.items()})


# -- the report against the fold -------------------------------------------------------------


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("report") / "captures")


@pytest.fixture(scope="module")
def report(captures: Path, tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> dict[str, Any]:
    """One report of every host, with a window around an instant in the middle of sw1's capture."""
    out = tmp_path_factory.mktemp("report-out")
    at = START + 20_000_000
    code = main(["report", str(captures), "--out", str(out / "report.html"), "--output", str(out / "o"),
                 "--around", iso(at), "--window", "2s", "--top", "8", *SPARK_ARGS])
    assert code == 0
    return {"dir": out, "html": (out / "report.html").read_text(), "at": at}


def page_data(text: str) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="swssd-report-data">(.*?)</script>', text, re.S)
    assert m
    data: dict[str, Any] = json.loads(m.group(1))
    return data


def test_the_figures_equal_a_plain_python_fold(report: dict[str, Any], captures: Path, spark: SparkSession) -> None:
    events, counts = read_events(captures)
    tables, keys = fold_figures(events)
    assert {h for h, *_ in tables} == {"sw1", "sw2", "sw3"}
    assert sum(1 for k in keys.values() if k[6]) > 10  # the captures do flap
    o = report["dir"] / "o" / "report"
    got_tables = {(r["host"], r["db"], r["table"]): (r["events"], r["sets"], r["dels"], r["notifications"],
                                                     r["dead_letters"], r["distinct_keys"])
                  for r in spark.read.parquet(str(o / "tables")).collect()}
    assert got_tables == tables
    got_keys = {(r["host"], r["db"], r["table"], r["key"]): (r["events"], r["sets"], r["dels"], r["dead_letters"],
                                                             r["alternations"], r["reversions"], r["flaps"])
                for r in spark.read.parquet(str(o / "keys")).collect()}
    assert got_keys == keys

    data = page_data(report["html"])
    assert {k: data["counts"][k] for k in ("lines", "events", "markers", "rejects")} == \
        {k: counts[k] for k in ("lines", "events", "markers", "rejects")}
    assert data["events"] == len(events) and data["hosts"] == ["sw1", "sw2", "sw3"]
    assert {(t["host"], t["db"], t["table"]): (t["events"], t["sets"], t["dels"], t["notifications"],
                                               t["dead_letters"], t["distinct_keys"]) for t in data["tables"]} == tables
    # the top keys: the most events first (then DELs, then the key), as the fold ranks them
    ranked = sorted(keys, key=lambda k: (-keys[k][0], -keys[k][2], k))[:8]
    assert [(k["host"], k["db"], k["table"], k["key"]) for k in data["top_keys"]] == ranked
    assert all(k["events"] == keys[(k["host"], k["db"], k["table"], k["key"])][0] for k in data["top_keys"])
    flapping = sorted((k for k in keys if keys[k][6]), key=lambda k: (-keys[k][6], -keys[k][0], k))[:8]
    assert [(k["host"], k["db"], k["table"], k["key"]) for k in data["flapping"]] == flapping
    assert [(k["alternations"], k["reversions"], k["flaps"]) for k in data["flapping"]] == \
        [keys[k][4:] for k in flapping]
    assert data["flapping_keys"] == sum(1 for k in keys.values() if k[6]) and data["keys"] == len(keys)
    reasons = data["reject_reasons"]
    assert sum(reasons.values()) == counts["rejects"] and reasons["malformed JSON"] >= 2
    assert data["rejects_path"] == str(report["dir"] / "o" / "rejects")

    # the window: every event of every host within 2 s of the instant
    inside = [e for e in events if abs(e["us"] - report["at"]) <= 2_000_000]
    assert data["around"]["events"] == len(inside) > 0
    assert {e["host"] for e in inside} == {"sw1", "sw2", "sw3"}


def _top_of_each_table(keys: dict[tuple[str, ...], tuple[int, ...]], n: int, tables: int) -> list[tuple[Any, ...]]:
    """(db, table, SET and DEL records, [(host, key, events)...]) of the `tables` busiest tables, as the fold
    counts them, each table's keys ordered as the report orders them (events, DELs, then by name)."""
    per_table: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for (host, db, table, key), figures in keys.items():
        per_table.setdefault((db, table), []).append((host, key, figures[0], figures[2]))
    busiest = sorted(per_table, key=lambda t: (-sum(k[2] for k in per_table[t]), t))[:tables]
    return [(db, table, sum(k[2] for k in per_table[(db, table)]),
             [(h, k, e) for h, k, e, _ in sorted(per_table[(db, table)], key=lambda k: (-k[2], -k[3], k[0], k[1]))[:n]])
            for db, table in busiest]


def test_each_busy_tables_most_changed_keys_equal_the_fold(report: dict[str, Any], captures: Path) -> None:
    _, keys = fold_figures(read_events(captures)[0])
    data = page_data(report["html"])
    got = [(t["db"], t["table"], t["events"], [(k["host"], k["key"], k["events"]) for k in t["keys"]])
           for t in data["top_keys_per_table"]]
    assert got == _top_of_each_table(keys, 5, 10)
    assert '<h2 id="per-table-keys-h">Most changed keys per table</h2>' in report["html"]


def test_the_busiest_tables_top_key_is_named_when_a_map_outchanges_it(tmp_path: Path, spark: SparkSession) -> None:
    """The most changed keys over all tables are a CONFIG_DB map's; ROUTE_TABLE has more events and
    its own most changed key (199 changes) is still on the page."""
    lines, us = [], START
    def add(db: str, table: str, key: str, n: int, **extra: Any) -> None:
        nonlocal us
        for i in range(n):
            us += 1000
            lines.append(json.dumps({"ts": iso(us), "host": "sw1", "db": db, "table": table, "key": key,
                                     "op": "SET", "fvs": [["v", str(i)]], **extra}))
    add("APPL_DB", "ROUTE_TABLE", "10.0.0.0/24", 199, kind="state")
    for i in range(1, 10):
        add("APPL_DB", "ROUTE_TABLE", f"10.0.{i}.0/24", 60, kind="state")
    for key in ("pg_lossless_100000_5m", "pg_lossless_40000_5m"):
        add("CONFIG_DB", "BUFFER_PROFILE", key, 203, kind="subscriber")
    _write(tmp_path / "captures" / "sw1" / "swssd.capture.jsonl", lines)
    out = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "captures"), "--out", str(out), "--output", str(tmp_path / "o"),
                 "--top", "2", *SPARK_ARGS]) == 0
    data = page_data(out.read_text())
    assert [k["table"] for k in data["top_keys"]] == ["BUFFER_PROFILE", "BUFFER_PROFILE"]
    busiest = data["top_keys_per_table"][0]
    assert (busiest["table"], busiest["events"]) == ("ROUTE_TABLE", 199 + 9 * 60)
    top = busiest["keys"][0]
    assert (top["key"], top["events"]) == ("10.0.0.0/24", 199)
    section = out.read_text().split('id="per-table-keys-h"')[1]
    assert "ROUTE_TABLE" in section and "10.0.0.0/24" in section


def test_the_page_lists_the_dead_letters_with_their_reasons(report: dict[str, Any], captures: Path) -> None:
    events, _ = read_events(captures)
    dead = [(e["host"], e["db"], e["table"], e["key"], e["op"]) for e in events if e["dead"]]
    data = page_data(report["html"])
    assert data["dead_letters_total"] == len(dead) > 0
    listed = [(d["host"], d["db"], d["table"], d["key"], d["op"]) for d in data["dead_letters"]]
    assert len(listed) == min(len(dead), 200)
    assert not Counter(listed) - Counter(dead)
    assert {d["reason"] for d in data["dead_letters"]} == {"handler failed"}
    section = report["html"].split('id="dead-letters-h"', 1)[1].split("<h2", 1)[0]
    assert section.count("handler failed") == len(listed)


#: the page of the three-host capture: plotly.js compressed is some 2.0 MB of it
PAGE_BOUND = 2_500_000


def test_the_page_is_self_contained_and_small(report: dict[str, Any]) -> None:
    from plotly.offline import get_plotlyjs

    text = report["html"]
    assert len(text.encode()) < PAGE_BOUND
    # nothing to load: no element that names a resource (plotly.js itself holds URLs, for maps
    # and MathJax, which this page does not use; the browser test checks that nothing is fetched)
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)=", text)
    # plotly.js (packed), 4 charts' figures, the data, the loader
    assert text.count("<script") == 7
    for div in ("changes", "top-keys", "flapping-keys", "around"):
        assert f'id="{div}"' in text
        assert f'data-div="{div}"' in text
    # the packed script is plotly.js, byte for byte
    m = re.search(r'<script type="application/gzip;base64" id="swssd-plotly">([A-Za-z0-9+/=]+)</script>', text)
    assert m and gzip.decompress(base64.b64decode(m.group(1))).decode() == get_plotlyjs()


def test_filters_apply_as_in_the_other_commands(captures: Path, tmp_path: Path, spark: SparkSession,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    events, _ = read_events(captures, hosts=["sw1", "sw3"])
    until = START + 30_000_000
    kept = [e for e in events if e["table"] in ("PORT_TABLE", "PORT") and START + 5_000_000 <= e["us"] <= until]
    tables, keys = fold_figures(kept)
    assert main(["report", str(captures / "sw*"), "--only-host", "sw1", "--only-host", "sw3", "--table", "PORT*",
                 "--since", iso(START + 5_000_000), "--until", iso(until), "--out", str(tmp_path / "r.html"),
                 "--output", str(tmp_path / "o"), *SPARK_ARGS]) == 0
    data = page_data((tmp_path / "r.html").read_text())
    assert {(t["host"], t["db"], t["table"]): t["events"] for t in data["tables"]} == \
        {k: v[0] for k, v in tables.items()}
    got = {(r["host"], r["db"], r["table"], r["key"]): (r["events"], r["sets"], r["dels"], r["dead_letters"],
                                                        r["alternations"], r["reversions"], r["flaps"])
           for r in spark.read.parquet(str(tmp_path / "o" / "report" / "keys")).collect()}
    assert got == keys
    printed = capsys.readouterr().out
    assert re.search(r"read \d+ lines: \d+ events", printed) and f"-> {tmp_path / 'r.html'}" in printed


def test_a_segment_gives_the_same_figures(captures: Path, tmp_path: Path, spark: SparkSession) -> None:
    """The captures compacted into a segment (stored inputs: no text to parse, the rejects stored
    with it), then reported: the same figures as the fold, the same input summary."""
    segment = tmp_path / "segment"
    assert main(["compact", str(captures), "--out", str(segment), *SPARK_ARGS]) == 0
    assert main(["report", str(segment), "--out", str(tmp_path / "r.html"), "--output", str(tmp_path / "o"),
                 *SPARK_ARGS]) == 0
    events, counts = read_events(captures)
    tables, keys = fold_figures(events)
    o = tmp_path / "o" / "report"
    assert {(r["host"], r["db"], r["table"]): (r["events"], r["sets"], r["dels"], r["notifications"],
                                               r["dead_letters"], r["distinct_keys"])
            for r in spark.read.parquet(str(o / "tables")).collect()} == tables
    assert {(r["host"], r["db"], r["table"], r["key"]): (r["events"], r["sets"], r["dels"], r["dead_letters"],
                                                         r["alternations"], r["reversions"], r["flaps"])
            for r in spark.read.parquet(str(o / "keys")).collect()} == keys
    data = page_data((tmp_path / "r.html").read_text())
    assert {k: data["counts"][k] for k in ("lines", "events", "markers", "rejects")} == \
        {k: counts[k] for k in ("lines", "events", "markers", "rejects")}
    assert sum(data["reject_reasons"].values()) == counts["rejects"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--window", "soon"], "cannot read 'soon' as a duration"),
    (["--around", "yesterday"], "cannot read 'yesterday' as an instant"),
    (["--window", "0s"], "--window 0s: must be longer than zero"),
])
def test_bad_arguments_are_one_line_errors_before_spark(
    argv: list[str], message: str, captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(captures), "--out", str(tmp_path / "r.html"), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("swssd replay: ") and message in err


def test_out_and_inputs_errors(tmp_path: Path, captures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(captures), "--out", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "nothing*"), "--out", str(tmp_path / "r.html")]) == 2
    assert "no file matches" in capsys.readouterr().err


def test_help_lists_the_exit_statuses() -> None:
    from swssd.replay.cli import build_parser

    sub = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name, parser in sub.items():
        assert parser.epilog and parser.epilog.startswith("exit status: 0 "), name
    assert "--around" in sub["report"].format_help() and "--until" in sub["report"].format_help()


def test_durations() -> None:
    from swssd.replay.timeparse import parse_duration

    assert [parse_duration(t) for t in ("2s", "500ms", "1.5m", "250us", "3", "1h")] == \
        [2_000_000, 500_000, 90_000_000, 250, 3_000_000, 3_600_000_000]


def test_bucket_steps() -> None:
    from swssd.replay.overview import MAX_BUCKETS, bucket_step

    assert bucket_step(0, 100_000) == 1_000  # 0.1 s: 1 ms buckets
    assert bucket_step(0, 3_599_999_999) == 15_000_000  # an hour: 240 buckets of 15 s
    assert bucket_step(0, 3_600_000_000) == 30_000_000  # one more: the next step
    for first, last in ((5, 5), (123, 10**12), (10**15, 10**15 + 7 * 86_400_000_000)):
        step = bucket_step(first, last)
        assert last // step - first // step + 1 <= MAX_BUCKETS


# -- in a browser ------------------------------------------------------------------------------

def drawn_in(driver: Any, page: Path) -> str:
    """Open `page` and wait for its loader's verdict: "yes" once every chart is drawn."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(page.as_uri())
    # plotly.js is inflated and run after the page loads; the loader marks the body when done
    return str(WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.drawn")))


def test_the_page_renders_in_headless_chromium(report: dict[str, Any], tmp_path: Path) -> None:
    """Opened offline in Chromium: no script error, nothing fetched, every chart drawn with the
    expected traces, the per-table series adding up to the events; a screenshot is kept."""
    driver = chromium(tmp_path)
    try:
        assert drawn_in(driver, report["dir"] / "report.html") == "yes"
        drawn = driver.execute_script("""
            const out = {};
            for (const id of ['changes', 'top-keys', 'flapping-keys', 'around']) {
              const gd = document.getElementById(id);
              out[id] = gd && gd._fullData ? gd._fullData.map(t => [t.name, Array.from(t.y || []).length,
                t.type === 'scatter' && t.mode === 'lines' ? Array.from(t.y).reduce((a, b) => a + b, 0) : 0,
                t.xaxis]) : null;
              out[id + ':svg'] = gd ? gd.querySelectorAll('.main-svg').length : 0;
            }
            out.fetched = performance.getEntriesByType('resource').map(e => e.name);
            return out;""")
        data = page_data(report["html"])
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        assert drawn["fetched"] == []
        for div in ("changes", "top-keys", "flapping-keys", "around"):
            assert drawn[div] and drawn[f"{div}:svg"] > 0, div
        per_table = [t for t in drawn["changes"] if t[3] == "x"]
        per_host = [t for t in drawn["changes"] if t[3] == "x2"]
        assert {t[0] for t in per_host} >= {"sw1 SET", "sw2 DEL", "sw3 SET"}
        assert {"PORT_TABLE SET", "ROUTE_TABLE DEL", "NOTIFICATIONS notification"} <= {t[0] for t in per_table}
        assert sum(t[2] for t in per_table) == sum(t[2] for t in per_host) == data["events"]
        assert [t[1] for t in drawn["top-keys"]] == [len(data["top_keys"])] * 2  # SET and DEL bars
        # a click on a key's bar opens its history
        opened = driver.execute_script("""
            const gd = document.getElementById('flapping-keys');
            gd.emit('plotly_click', {points: [{customdata: 'flap-1'}]});
            const d = document.getElementById('flap-1');
            return [d.open, d.querySelectorAll(':scope table tbody tr').length];""")
        assert opened == [True, data["flapping"][1]["history_shown"]] and opened[1] > 0
        # the --around instant is marked on the time chart
        marks = driver.execute_script("""
            const l = document.getElementById('changes')._fullLayout;
            return [l.shapes.map(s => s.x0), l.annotations.map(a => a.text)];""")
        assert len(marks[0]) == 1 and any(text.startswith("--around ") for text in marks[1])
        # every table fits the 1,400 px window: nothing wider than the page, no column cut
        fit = driver.execute_script("""
            const right = document.body.getBoundingClientRect().right;
            const wide = Array.from(document.querySelectorAll('table')).filter(
                t => t.getBoundingClientRect().right > right + 1).length;
            return [window.innerWidth, document.documentElement.scrollWidth, wide];""")
        assert fit[0] == 1400 and fit[1] <= fit[0] and fit[2] == 0, fit
        driver.execute_script("document.getElementById('changes').scrollIntoView()")
        shot = report["dir"] / "report.png"
        driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        if os.environ.get("SWSSD_REPORT_SCREENSHOT"):  # keep one where a person can look at it
            shutil.copy(shot, os.environ["SWSSD_REPORT_SCREENSHOT"])
    finally:
        driver.quit()


def test_an_empty_input_gives_a_page_that_says_so(tmp_path: Path, spark: SparkSession,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "sw1").mkdir()
    (tmp_path / "sw1" / "swssd.capture.jsonl").write_text("")
    assert main(["report", str(tmp_path / "sw1"), "--out", str(tmp_path / "r.html"), "--output",
                 str(tmp_path / "o"), "--around", iso(START), *SPARK_ARGS]) == 0
    text = (tmp_path / "r.html").read_text()
    assert "<p>No events.</p>" in text and page_data(text)["events"] == 0
    captured = capsys.readouterr()
    assert "read 0 lines" in captured.out and "warning: the inputs hold no lines" in captured.err


def test_a_page_too_big_is_shortened_to_fit() -> None:
    """A fleet's worth of tables and keys with long values and very long keys: the keys are cut to
    what the page shows (issue 35: they were listed whole), the page fits; and under a bound it
    does not fit, the lists are cut until it does."""
    from swssd.replay.overview import Around, Event, KeyFigures, Overview, Series, Timeline
    from swssd.replay.page import PAGE_LIMIT, render

    def ev(i: int) -> Event:
        return Event(START + i, f"sw{i % 40}", "APPL_DB", "ROUTE_TABLE", f"10.{i}.0.0/24|" + "route-map-" * 1000,
                     "SET", "state", False,
                     [("nexthop", ",".join(f"10.0.{j}.1" for j in range(40)))])

    def key(i: int) -> KeyFigures:
        return KeyFigures(f"sw{i}", "APPL_DB", "ROUTE_TABLE", f"10.{i}.0.0/24", 100, 90, 10, 0, 5, 5, 10,
                          START, START + 1000, [ev(j) for j in range(20)])

    tables = [{"host": f"sw{h}", "db": "APPL_DB", "table": f"T{t}", "events": 10, "sets": 9, "dels": 1,
               "notifications": 0, "dead_letters": 0, "distinct_keys": 3, "first_us": START, "last_us": START + 9}
              for h in range(40) for t in range(30)]
    series = [Series(f"T{t}", op, [70_000] * 240) for t in range(11) for op in ("SET", "DEL", "notification")]
    ov = Overview(counts={"lines": 1, "events": 1}, rejects_path=None, reject_reasons=[], sources=[],
                  events=1, first_us=START, last_us=START + 10**9, hosts=[f"sw{h}" for h in range(40)],
                  tables=tables, timeline=Timeline(START, 5_000_000, 240, series, series), keys_total=30,
                  flapping_total=15, top_keys=[key(i) for i in range(15)], flapping=[key(i) for i in range(15)],
                  around=Around(START, 1_000_000, 5000, [ev(i) for i in range(300)]))
    text = render(ov, {"inputs": "x"})
    assert len(text.encode()) <= PAGE_LIMIT and "route-map-" * 20 not in text
    assert page_data(text)["tables_total"] == 1200
    bound = len(text.encode()) - 150_000
    small = render(ov, {"inputs": "x"}, limit=bound)
    assert len(small.encode()) <= bound
    assert "Some lists were shortened" in small and page_data(small)["tables_total"] == 1200


def test_hostile_names_neither_blank_nor_swell_the_page_and_no_link_is_followed(
    tmp_path: Path, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 35: `<!--<script>` in a host, a table and a key (the page's JSON blocks escaped only
    `</`: the rest of the page, chart library included, became part of a block and nothing was
    drawn); two keys of 2 MB (printed whole six times: a 26 MB page); and a symbolic link planted
    at the page's old temporary name, pointing at a victim file (overwritten before). The page is
    drawn in Chromium with no script error, stays under its bound, and is a regular file beside an
    untouched victim."""
    host = "sw<!--<script>"
    capture = tmp_path / "captures" / "sw1"
    capture.mkdir(parents=True)
    keys = ["<!--<script>k", "k" + "x" * (2 << 20), "y" * (2 << 20), "<!--<script>k"] * 3
    records = [{"ts": iso(START + i * 1000), "host": host, "db": "APPL_DB", "table": "T<!--<script>&>", "key": key,
                "op": "SET" if i % 2 else "DEL", "fvs": [["f<!--<script>", f"v{i}</script>"]] if i % 2 else []}
               for i, key in enumerate(keys)]
    _write(capture / "swssd.capture.jsonl", [json.dumps(r) for r in records])
    out = tmp_path / "r.html"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / ".r.html.partial").symlink_to(victim)
    assert main(["report", str(capture), "--out", str(out), "--output", str(tmp_path / "o"),
                 "--around", iso(START + 5000), *SPARK_ARGS]) == 0
    capsys.readouterr()
    assert victim.read_text() == "keep me"
    assert out.is_file() and not out.is_symlink()
    text = out.read_text()
    assert len(text.encode()) < 5_000_000, len(text.encode())
    data = page_data(text)
    assert data["events"] == 12 and data["hosts"] == [host]
    assert {k["key"] for k in data["top_keys"]} >= {"<!--<script>k"}
    assert max(len(k["key"]) for k in data["top_keys"]) <= 100
    # no raw < > & inside any JSON block
    for block in re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', text, re.S):
        assert not set(block) & set("<>&"), block[:200]
    driver = chromium(tmp_path)
    try:
        assert drawn_in(driver, out) == "yes"
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        bars = driver.execute_script("return document.getElementById('top-keys')._fullData.length")
        assert bars == 2
    finally:
        driver.quit()
