"""The memory-poisoning surrogate: attacks do what they claim, and the CLI contract holds."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

pytest.importorskip("sklearn", reason="needs the 'memory' extra")
pytest.importorskip("torch", reason="needs the 'memory' extra")

from misguard.bench.memory import Attack, build_memory, make_scenarios, run_eval  # noqa: E402
from misguard.bench.memory._env import Embedder  # noqa: E402
from misguard.bench.memory._run import _labels  # noqa: E402
from misguard.cli.main import app  # noqa: E402
from misguard.memory import HashedRecordFeaturizer  # noqa: E402


def _scenario(kind: str, ratio: float = 0.05, caps=("C1", "C2", "C3"), n: int = 1500, seed: int = 3):
    rng = np.random.default_rng(seed)
    sc = make_scenarios(1, rng)[0]
    emb = Embedder(HashedRecordFeaturizer(), sc)
    table, info = build_memory(sc, emb, rng, n, Attack(kind, ratio, frozenset(caps)))
    return sc, emb, table, info


def test_clean_memory_gives_the_reference_policy() -> None:
    sc, emb, table, _ = _scenario("none", 0.0)
    assert table.label[:table.n].sum() == 0
    decisions, wrong = run_eval(table, sc, emb, np.random.default_rng(0), 20, 10_000)
    assert decisions == 20 * sc.n_agents and wrong / decisions < 0.02


@pytest.mark.parametrize("kind", ["I", "II", "III"])
def test_poison_causes_wrong_actions_and_spreads(kind: str) -> None:
    sc, emb, table, info = _scenario(kind, 0.08)
    labels = _labels(sc, table)
    assert (labels == 1).sum() == round(0.08 * 1500)
    assert (labels == 2).sum() > 0  # honest agents inherited poisoned decisions
    clean = table.copy()
    clean.active[:clean.n] = labels == 0
    d0, w0 = run_eval(table.copy(), sc, emb, np.random.default_rng(1), 20, 10_000)
    d1, w1 = run_eval(clean, sc, emb, np.random.default_rng(1), 20, 10_000)
    assert w0 / d0 > w1 / d1 + 0.02


def test_type_ii_is_camouflaged_near_benign_centroids() -> None:
    _, _, table, info = _scenario("II", 0.05, n=2500)
    cos = np.array(info.centroid_cosines)
    assert len(cos) and cos.mean() >= 0.90
    poison = table.label[:table.n] == 1
    # Same situations, same wording as benign memory: only the action differs.
    assert {tuple(t[0][:2]) for t, p in zip(table.tokens, poison) if p} <= {tuple(t[0][:2]) for t, p in zip(table.tokens, poison) if not p}


def test_type_iii_colluders_agree_and_cite_each_other() -> None:
    _, _, table, info = _scenario("III", 0.05, n=2500)
    poison = np.flatnonzero(table.label[:table.n] == 1)
    assert len(set(table.agent[poison].tolist())) <= 2
    src, dst = np.array(table.src), np.array(table.dst)
    assert np.isin(src, poison).any() and (np.isin(src, poison) & np.isin(dst, poison)).sum() > 0


def test_cli_contract_and_resume(tmp_path) -> None:
    runner = CliRunner()
    args = ["bench", "memory", "--ratio", "0.05", "--type", "II", "--seeds", "2", "--records", "2400", "--scenarios", "10",
            "--encoder-steps", "30", "--output", str(tmp_path)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    keys = {"auc", "fpr", "misbehavior_before", "misbehavior_after", "hops_before", "hops_after"}
    assert keys <= set(summary)
    assert set(summary["baselines"]) == {"isolation_forest", "ocsvm", "residual"}
    for block in summary["baselines"].values():
        assert keys <= set(block)
    assert 0.0 <= summary["auc"] <= 1.0 and 0.0 <= summary["fpr"] <= 1.0
    assert len(summary["records_per_seed"]) == 2 and "Table 2" in res.output
    first_line = (tmp_path / "runlog.jsonl").read_text().splitlines()[0]
    assert json.loads(first_line)["kind"] == "bench.memory"
    res2 = runner.invoke(app, args)
    assert res2.exit_code == 0 and "skipped" in res2.output
    assert list(tmp_path.glob("memory-seed*.db"))
    other = runner.invoke(app, [a if a != "II" else "III" for a in args])
    assert other.exit_code == 2 and "other parameters" in other.output


def test_cli_rejects_bad_options(tmp_path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["bench", "memory", "--type", "IV", "--output", str(tmp_path)])
    assert res.exit_code == 2 and "--type" in res.output
    res = runner.invoke(app, ["bench", "memory", "--ratios", "0.05,abc", "--output", str(tmp_path)])
    assert res.exit_code == 2
    res = runner.invoke(app, ["bench", "memory", "--backend", "postgres", "--output", str(tmp_path)])
    assert res.exit_code == 2 and "postgres-url" in res.output
