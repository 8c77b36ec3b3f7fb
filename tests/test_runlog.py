from __future__ import annotations

import pytest

from misguard.errors import DataError
from misguard.runlog import RunHeader, RunLog, read_runlog


def test_write_resume_and_read(tmp_path):
    path = tmp_path / "run" / "log.jsonl"
    with RunLog.open(path, RunHeader(kind="test", seeds={"llm": 1})) as log:
        log.write("item", key="t1", score=1.0)
    with RunLog.open(path, RunHeader(kind="other")) as log:
        assert log.header.kind == "test"  # the original header is kept
        assert log.done_keys("item") == {"t1"}
        log.write("item", key="t2", score=0.5)
    header, events = read_runlog(path)
    assert header.schema_version == 1 and [e.key for e in events] == ["t1", "t2"]


def test_torn_last_line_is_tolerated_but_corruption_is_not(tmp_path):
    path = tmp_path / "log.jsonl"
    with RunLog.open(path, RunHeader(kind="test")) as log:
        log.write("item", key="a")
    with path.open("a") as fh:
        fh.write('{"type": "item", "ke')
    assert len(read_runlog(path)[1]) == 1
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "garbage", lines[1]]) + "\n")
    with pytest.raises(DataError, match=":2:"):
        read_runlog(path)


def test_a_run_resumed_after_a_torn_write_stays_readable(tmp_path):
    """A crash mid-write leaves a torn last line; the resumed run appends after it, and the
    run after that must still read every complete event (the torn one is gone)."""
    path = tmp_path / "log.jsonl"
    with RunLog.open(path, RunHeader(kind="test")) as log:
        log.write("item", key="a")
    with path.open("a") as fh:
        fh.write('{"type": "item", "ke')  # killed here
    with RunLog.open(path, RunHeader(kind="test")) as log:
        assert log.done_keys("item") == {"a"}
        log.write("item", key="b")
    with RunLog.open(path, RunHeader(kind="test")) as log:
        assert log.done_keys("item") == {"a", "b"}
        log.write("item", key="c")
    assert [e.key for e in read_runlog(path)[1]] == ["a", "b", "c"]


def test_a_torn_header_starts_the_log_again(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"type": "header", "schema_ver')  # killed while the header was written
    with RunLog.open(path, RunHeader(kind="test")) as log:
        assert log.header.kind == "test" and log.events == []
        log.write("item", key="a")
    assert [e.key for e in read_runlog(path)[1]] == ["a"]
