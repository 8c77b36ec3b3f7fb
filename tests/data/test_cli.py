"""`misguard data list|fetch|verify|add|path` through the CLI runner."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from misguard.cli.main import app

from .conftest import CONTENT, archive

runner = CliRunner()


def _flat(result) -> str:
    return " ".join(result.output.split())


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    """An empty cache and an empty mirror, through the settings' environment names."""
    cache, mirror = tmp_path / "cache", tmp_path / "mirror"
    mirror.mkdir()
    monkeypatch.setenv("MISGUARD_DATA_CACHE_DIR", str(cache))
    monkeypatch.setenv("MISGUARD_DATA_DIR", str(mirror))
    return cache, mirror


def test_fetch_verify_path_and_list(dirs, site, dataset):
    cache, _ = dirs
    refused = runner.invoke(app, ["data", "fetch", dataset.name])
    assert refused.exit_code == 2 and "non-public" in _flat(refused) and site.requests == []
    fetched = runner.invoke(app, ["data", "fetch", dataset.name, "--allow-private", "--retries", "0"])
    assert fetched.exit_code == 0, fetched.output
    assert "3 download(s), 5 file(s) verified and placed" in _flat(fetched)
    assert "already in the cache" in _flat(runner.invoke(app, ["data", "fetch", dataset.name, "--allow-private"]))
    path = runner.invoke(app, ["data", "path", f"{dataset.name}/notes/b.tsv"])
    assert path.exit_code == 0 and path.output.strip() == str(cache / "tests/pinned/notes/b.tsv")
    ok = runner.invoke(app, ["data", "verify", dataset.name])
    assert ok.exit_code == 0, ok.output
    (cache / "tests/pinned/claims.jsonl").write_bytes(b"{}\n")
    bad = runner.invoke(app, ["data", "verify", dataset.name])
    assert bad.exit_code == 1 and f"mismatch {cache / 'tests/pinned/claims.jsonl'} has sha256" in _flat(bad)
    listed = runner.invoke(app, ["data", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {row["name"]: row for row in json.loads(listed.output)}
    assert {"misinfotask", "liar", "checkthat2020", "snopes"} <= rows.keys()
    assert rows[dataset.name]["roots"][str(cache)] == "4/5 ok, 1 mismatch"
    assert rows["liar"]["download"][0].startswith("https://raw.githubusercontent.com/nishitpatel01/")
    assert "liar" in runner.invoke(app, ["data", "list"]).output


def test_add_refuses_a_wrong_file_and_places_a_right_one(dirs, tmp_path, dataset):
    cache, _ = dirs
    right, wrong = tmp_path / "d.txt", tmp_path / "other.txt"
    right.write_bytes(CONTENT["d.txt"])
    wrong.write_bytes(b"something else\n")
    refused = runner.invoke(app, ["data", "add", dataset.name, str(wrong)])
    assert refused.exit_code == 2 and "is none of" in _flat(refused)
    assert not (cache / "tests").exists()
    placed = runner.invoke(app, ["data", "add", dataset.name, str(right)])
    assert placed.exit_code == 0, placed.output
    assert "1 file(s) verified and placed: d.txt" in _flat(placed) and "still lacks" in _flat(placed)
    assert (cache / "tests/pinned/d.txt").read_bytes() == CONTENT["d.txt"]
    missing = runner.invoke(app, ["data", "verify", "liar"])
    assert missing.exit_code == 1 and "no complete verified copy" in _flat(missing)


def test_data_names_in_other_commands(dirs, tmp_path, dataset):
    """`claims add` and the benchmarks' --data take dataset names; unknown ones say what exists."""
    bundle = tmp_path / "release.zip"
    bundle.write_bytes(archive())
    assert runner.invoke(app, ["data", "add", dataset.name, str(bundle)]).exit_code == 0
    result = runner.invoke(app, ["--embedder", "hashing/64", "claims", "add", "--db", str(tmp_path / "db"),
                                 f"{dataset.name}/claims.jsonl"])
    assert result.exit_code == 0, result.output
    assert "claims.jsonl: 1 added" in _flat(result)
    unknown = runner.invoke(app, ["bench", "misinfotask", "--data", "misinfotask-nope", "--tasks", "0"])
    assert unknown.exit_code == 2 and "no dataset of that name" in _flat(unknown) and "misinfotask-new" in _flat(unknown)
    absent = runner.invoke(app, ["bench", "misinfotask", "--data", "misinfotask", "--tasks", "0"])
    assert absent.exit_code == 2 and "misguard data fetch misinfotask" in _flat(absent)
