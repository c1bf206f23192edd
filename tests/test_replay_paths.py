"""Which files a replay reads, resolved before Spark starts (no Spark needed here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from swssd.replay.paths import NoInputError, resolve_inputs


def touch(path: Path, text: str = "x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_swss_rec_beside_a_jsonl_capture_is_left_out_and_named(tmp_path: Path) -> None:
    d = tmp_path / "sw1"
    jsonl = [touch(d / name) for name in ("swssd.capture.jsonl", "swssd.capture.jsonl.1", "swssd.capture.jsonl.2.gz")]
    for name in ("swss.rec", "swss.rec.1", "swss.rec.2.gz"):
        touch(d / name)
    # docs/replay.md's glob pair, and the directory itself: the same answer
    for inputs in ([str(d / "swss.rec*"), str(d / "*.jsonl*")], [str(d)]):
        got = resolve_inputs(inputs)
        assert sorted(got.paths) == sorted(map(str, jsonl))
        assert got.skipped == {str(d): ["swss.rec", "swss.rec.1", "swss.rec.2.gz"]}
        assert len(got.notes()) == 1 and "3 swss.rec file(s)" in got.notes()[0]


def test_swss_rec_alone_or_in_another_directory_is_read(tmp_path: Path) -> None:
    rec = touch(tmp_path / "orchagent" / "swss.rec")
    other = touch(tmp_path / "swssd" / "swssd.capture.jsonl")
    assert resolve_inputs([str(rec)]).paths == [str(rec)]
    got = resolve_inputs([str(rec), str(other)])
    assert got.paths == [str(rec), str(other)] and got.skipped == {} and got.notes() == []


def test_directories_globs_and_duplicates(tmp_path: Path) -> None:
    a = touch(tmp_path / "caps" / "sw1" / "swssd.capture.jsonl")
    b = touch(tmp_path / "caps" / "sw2" / "swssd.capture.jsonl")
    touch(tmp_path / "caps" / "sw2" / ".hidden")
    touch(tmp_path / "caps" / "_SUCCESS")
    assert resolve_inputs([str(tmp_path / "caps")]).paths == [str(a), str(b)]
    assert resolve_inputs([str(tmp_path / "caps" / "*"), str(a), f"file://{b}"]).paths == [str(a), str(b)]


def test_remote_inputs_pass_through(tmp_path: Path) -> None:
    a = touch(tmp_path / "swssd.capture.jsonl")
    assert resolve_inputs(["hdfs://nn/captures/*", str(a)]).paths == [str(a), "hdfs://nn/captures/*"]


def test_an_input_matching_nothing_is_an_error(tmp_path: Path) -> None:
    touch(tmp_path / "swssd.capture.jsonl")
    for missing in (str(tmp_path / "nothing*"), str(tmp_path / "absent.jsonl")):
        with pytest.raises(NoInputError, match="no file matches"):
            resolve_inputs([str(tmp_path / "swssd.capture.jsonl"), missing])


def test_an_empty_directory_stays_as_itself(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert resolve_inputs([str(tmp_path / "empty")]).paths == [str(tmp_path / "empty")]
