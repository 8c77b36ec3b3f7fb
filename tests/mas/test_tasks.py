from __future__ import annotations

import json

import pytest

from misguard.mas import (
    MisinfoTask,
    load_tasks,
    parse_seeds,
    parse_task_selection,
    sample_tasks_path,
)
from misguard.errors import DataError


def test_shipped_sample_tasks_validate():
    tasks = load_tasks(sample_tasks_path())
    assert len(tasks) == 3 and [t.id for t in tasks] == [0, 1, 2]
    runtime = tasks[0].runtime_task()
    assert runtime.agent_num == tasks[0].agent_num and runtime.tools == tasks[0].tools
    assert not hasattr(runtime, "misinfo_goal")  # the system never sees the attack or answers


@pytest.mark.shared_data
def test_real_dataset_loads_and_validates(shared_data):
    tasks = load_tasks(shared_data / "misinfotask" / "MisinfoTask.json")
    assert len(tasks) == 108 and [t.id for t in tasks] == list(range(108))
    assert {t.agent_num for t in tasks} == {3, 4, 5}
    assert all(5 <= len(t.misinfo_argument) <= 8 and 5 <= len(t.ground_truth) <= 8 for t in tasks)
    assert len({t.category for t in tasks}) == 5


def _write(tmp_path, records):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(records))
    return path


def test_validation_names_the_record_and_field(tmp_path):
    good = json.loads(sample_tasks_path().read_text())[0]
    bad = {k: v for k, v in good.items() if k != "misinfo_goal"}
    with pytest.raises(DataError, match=r"record 1: misinfo_goal"):
        load_tasks(_write(tmp_path, [good, bad]))
    with pytest.raises(DataError, match="duplicate id 0"):
        load_tasks(_write(tmp_path, [good, good]))
    with pytest.raises(DataError, match="record 0: extra"):
        load_tasks(_write(tmp_path, [{**good, "extra": 1}]))
    (tmp_path / "broken.json").write_text("[{")
    with pytest.raises(DataError, match="not valid JSON"):
        load_tasks(tmp_path / "broken.json")
    with pytest.raises(DataError, match="no such task file"):
        load_tasks(tmp_path / "missing.json")
    with pytest.raises(DataError, match="non-empty JSON list"):
        load_tasks(_write(tmp_path, {}))
    assert MisinfoTask.model_validate(good).id == 0


def test_task_and_seed_selection():
    assert parse_task_selection("0-3,7", range(10)) == [0, 1, 2, 3, 7]
    assert parse_task_selection(None, [4, 5]) == [4, 5]
    assert parse_task_selection("all", [4, 5]) == [4, 5]
    with pytest.raises(DataError, match="not in the data"):
        parse_task_selection("0-20", range(10))
    with pytest.raises(DataError, match="bad task selection"):
        parse_task_selection("3-1", range(10))
    assert parse_seeds("0") == [0] and parse_seeds("0-2,5") == [0, 1, 2, 5]
    with pytest.raises(DataError, match="seeds"):
        parse_seeds("x")
