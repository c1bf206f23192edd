"""The randomized fault campaign in CI (issue 34): SWSSD_CAMPAIGN_SEEDS seeds (default 0-19), each
a seeded schedule of 2-4 faults over SWSSD_CAMPAIGN_SECONDS (default 5) of writes into a table of
every kind the daemon consumes, plus the blocking layer's clients; the seeds cover every fault kind.
A failing seed names itself and the command that replays it:

    PYTHONPATH=tests .venv/bin/python -m campaign --seed 7 --keep /tmp/campaign   (logs and records kept)
    SWSSD_CAMPAIGN_SEEDS=7 .venv/bin/python -m pytest -q tests/test_campaign.py -n 0

bench/bench_campaign.py runs hundreds of seeds. tests/campaign/ has the parts (schedule, proxy,
plugin, checker, runner).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from campaign import FAULT_KINDS, generate, run_schedule
from campaign.__main__ import parse_seeds, report
from campaign.checker import Model, check_values, compare, fold

SEEDS = parse_seeds(os.environ.get("SWSSD_CAMPAIGN_SEEDS", "0-19"))
SECONDS = float(os.environ.get("SWSSD_CAMPAIGN_SECONDS", "5"))


#: seeds whose anomaly is known and open (issue 34): run and reported, not failing the suite while open
KNOWN_OPEN: dict[int, str] = {}


@pytest.mark.parametrize("seed", [pytest.param(s, marks=pytest.mark.xfail(reason=KNOWN_OPEN[s], strict=False))
                                  if s in KNOWN_OPEN else s for s in SEEDS])
def test_no_change_lost_nothing_wrong_under_a_seeded_fault_schedule(seed: int, tmp_path: Path) -> None:
    result = run_schedule(generate(seed, SECONDS), tmp_path)
    assert not result.anomalies, (
        f"\n{report(result)}\n  or: SWSSD_CAMPAIGN_SEEDS={seed} SWSSD_CAMPAIGN_SECONDS={SECONDS:g} "
        f".venv/bin/python -m pytest -q tests/test_campaign.py -n 0\n  logs and records: {tmp_path}"
    )
    assert sum(result.faults.values()) == len(result.schedule.faults), "every scheduled fault was injected"
    assert result.changes_checked > 0 and result.blocking["calls"] > 0


def test_the_default_seeds_inject_every_fault_kind() -> None:
    kinds = {f.kind for seed in parse_seeds("0-19") for f in generate(seed).faults}
    assert kinds == set(FAULT_KINDS)


def test_a_schedule_is_a_function_of_its_seed() -> None:
    assert generate(1234) == generate(1234)
    assert generate(1234) != generate(1235)


def test_the_checker_sees_lost_stale_mismatched_unknown_reordered_and_twice_handled_values() -> None:
    model = Model()
    model.write("T", "a", [("f", "v1")])
    model.write("T", "a", [("f", "v3")])
    model.write("T", "b", [("f", "v2")])
    model.delete("T", "b")
    model.write("T", "c", [("f", "v4")])
    handled = [("T", "a", "SET", [("f", "v3")]), ("T", "a", "SET", [("f", "v1")]),
               ("T", "b", "SET", [("f", "v2")]), ("T", "d", "SET", [("f", "v9")]), ("T", "b", "SET", [("f", "v2")])]
    found = compare("state", "T", fold(handled, False), model.truth["T"])
    assert [a.split(":")[1].split(",")[0].strip() for a in found] == [
        "1 keys lost", "2 keys stale after DEL", "1 entries mismatched"]
    found = check_values("zmq", "T", [handled], model, at_most_once=True)
    assert len(found) == 3 and "never written" in found[0] and "older" in found[1] and "more than once" in found[2]
    # at-least-once across processes: a replay at the next start is no anomaly
    assert check_values("state", "T", [handled[:1], handled[:1]], model, at_most_once=False) == []
