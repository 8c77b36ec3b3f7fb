"""The MPE memory benchmark: memories change actions, poison spreads over several hops, no
metadata field gives the label away, and the CLI walks the detector registry."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

pytest.importorskip("sklearn", reason="needs the 'memory' extra")
pytest.importorskip("torch", reason="needs the 'memory' extra")
pytest.importorskip("mpe2", reason="needs the 'memory-env' extra")

from misguard.bench.memory import Attack, build_world, field_separability, make_scenarios, propagation  # noqa: E402
from misguard.cli.main import app  # noqa: E402
from misguard.memory import DETECTORS  # noqa: E402


def _world(folder, kind: str, ratio: float = 0.05, n: int = 1500, sid: int = 0, caps=("C1", "C2", "C3"), name: str = "", **kw):
    sc = make_scenarios(sid + 1, np.random.default_rng(11))[sid]
    return build_world(sc, folder / f"{name}{kind}-{sid}.db", np.random.default_rng([11, sid]), n, Attack(kind, ratio, frozenset(caps)), **kw)


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    """One clean and one poisoned (5%) world per attack type, built once for the module."""
    folder = tmp_path_factory.mktemp("worlds")
    return {kind: _world(folder, kind, 0.0 if kind == "none" else 0.05) for kind in ("none", "I", "II", "III")}


def test_clean_memory_follows_the_reference_policy(worlds) -> None:
    w = worlds["none"]
    assert all(t.label == 0 for t in w.truth.values())
    # Exploration (8%) is the only source of wrong actions in a clean build.
    assert w.wrong / w.decisions < 0.1


@pytest.mark.parametrize("kind", ["I", "II", "III"])
def test_poison_changes_actions_and_spreads_over_hops(worlds, kind: str) -> None:
    clean, w = worlds["none"], worlds[kind]
    prop = propagation(w.memory.store, w.truth)
    assert prop["poison"] == round(0.05 * 1500)
    assert w.wrong / w.decisions > clean.wrong / clean.decisions + 0.03  # memories really change actions
    assert prop["affected"] > 0 and prop["hop_max"] >= 3  # reuse chains, not one hop from the poison
    assert prop["hop_sum"] / prop["hop_n"] > 1.3  # derived memories cite derived memories: most are not one hop away


def test_hops_cannot_be_shortened_by_editing_the_graph(tmp_path) -> None:
    """Chain poison -> d1 -> d2 -> d3 (all wrong): quarantining d1 or pruning its edge does not hide d2
    and d3; rewriting d3 to the reference action removes it from the affected records."""
    from misguard.bench.memory._mpe import ACTIONS, Truth, situation_state
    from misguard.memory import SharedMemory, open_store
    from misguard.types import MemoryRecord, Provenance

    state = situation_state(1, 0)  # reference action: right
    recs = [MemoryRecord.model_construct(id=f"r{i}", state=state, context="task=mpe-assigned-0", action="left", tags=[],
                                         provenance=Provenance.model_construct(agent=f"a{i}", time=float(i), channel="direct"),
                                         success=None, reward=0.0, confidence=0.8, embedding=None, version=1) for i in range(4)]
    truth = {r.id: Truth(int(r.id == "r0"), ACTIONS.index("left"), ACTIONS.index("right"), False) for r in recs}
    with open_store(tmp_path / "m.db") as store:
        SharedMemory(store).write(recs, [[], ["r0"], ["r1"], ["r2"]])
        assert propagation(store, truth)["hop_sum"] == 1 + 2 + 3
        store.quarantine("r1", "test")
        for e in store.edges():
            if e.src == "r1":
                store.prune_edge(e.id, "test")
        after = propagation(store, truth)
        assert (after["affected"], after["hop_sum"]) == (2, 2 + 3)
        store.rewrite("r3", {"action": "right"}, "test")
        assert (propagation(store, truth)["affected"], propagation(store, truth)["hop_sum"]) == (1, 2)


def test_online_defense_contains_poison_while_agents_act(tmp_path) -> None:
    """The same scenario and attack built without and with the guard repairing every 24 cycles through
    `MemoryGuard.guard_store`: later decisions retrieve repaired memory, so fewer honest records
    inherit the poison and fewer greedy decisions are wrong than without the defense."""
    from misguard.bench.memory._run import BUCKET_BITS, STATE_BLOCK, build_metrics, online_defense
    from misguard.memory import MemoryGuard, RecordArrays

    w = _world(tmp_path, "II", n=700)
    records = list(w.memory.store.iter_records())
    derived = set(propagation(w.memory.store, w.truth)["derived_ids"])
    labels = np.array([2 if r.id in derived else w.truth[r.id].label for r in records], dtype=np.int8)
    guard = MemoryGuard(DETECTORS.build("credibility"), key_block=STATE_BLOCK, bucket_bits=BUCKET_BITS, causal=True)
    rows = np.arange(len(records))
    guard.fit(RecordArrays.from_records(records), labels, rows, rows)
    counts: dict[str, int] = {}
    online = _world(tmp_path, "II", n=700, name="online-", after_step=online_defense(guard, 24, 0, counts))
    assert propagation(online.memory.store, online.truth)["poison"] == round(0.05 * 700)  # the same attack
    repaired = {e.target for e in online.memory.store.audit_log() if e.actor == "memory-guard"}
    assert counts["flagged"] > 0 and len(repaired) == counts["quarantine"] + counts["rewrite"] > 0
    before, after = build_metrics(w), build_metrics(online)
    assert before["derived"] > 30 and after["derived"] < 0.5 * before["derived"]
    assert after["wrong"] / after["decisions"] < before["wrong"] / before["decisions"]
    assert after["affected_end"] <= after["derived"]


# Counts of seeded worlds built by the reference implementation (commit 0b25a1c, before the
# simulator's speed-up): records written, greedy decisions, wrong decisions. A full digest of
# every record and edge was pinned here until 2026-11-25, when it failed on another CPU with
# these counts unchanged: retrieval ranks float32 cosines, other SIMD kernels break near-ties
# differently (seen by rerunning with NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL"), and the
# citations, vote shares and a few contexts change. The digest is now checked within one
# machine (two builds of the same seed must be identical); the counts across machines.
PINNED = {"I": (797, 707, 68), "II": (777, 707, 126), "III": (797, 707, 66)}


def _digest(w) -> str:
    import hashlib

    h = hashlib.sha256()
    for r in w.memory.store.iter_records():
        h.update(repr((r.id, r.version, r.state, r.context, r.action, r.tags, r.provenance.agent, r.provenance.time,
                       r.provenance.channel, r.success, r.reward, r.confidence, w.truth[r.id])).encode())
    for e in w.memory.store.edges(include_pruned=True):
        h.update(f"{e.src}>{e.dst}:{e.dst_kind}:{e.agent}".encode())
    return h.hexdigest()


@pytest.mark.parametrize("kind", ["I", "II", "III"])
def test_simulation_output_is_pinned(tmp_path, kind: str) -> None:
    """A seeded build writes the same records, metadata, ground truth and reuse edges every
    time, and the record and decision counts of the reference implementation."""
    w = _world(tmp_path, kind, n=800, sid=1)
    again = _world(tmp_path, kind, n=800, sid=1, name="again-")
    assert _digest(w) == _digest(again)
    assert (len(list(w.memory.store.iter_records())), w.decisions, w.wrong) == PINNED[kind]


def test_parallel_driver_steps_like_pettingzoo() -> None:
    """`ParallelMPE` gives the observations, rewards and agent lists of PettingZoo's
    `parallel_env` over two episodes (the first ends by truncation at 25 cycles)."""
    from mpe2 import simple_spread_v3

    from misguard.bench.memory._mpe import MAX_CYCLES, ParallelMPE

    kw = {"N": 5, "local_ratio": 0.5, "max_cycles": MAX_CYCLES, "continuous_actions": False}
    ref, lean = simple_spread_v3.parallel_env(**kw), ParallelMPE(**kw)
    rng = np.random.default_rng(3)
    for episode in range(2):
        (o1, _), (o2, _) = ref.reset(seed=episode), lean.reset(seed=episode)
        assert o1.keys() == o2.keys() and all(np.array_equal(o1[a], o2[a]) for a in o1)
        steps = 0
        while ref.agents:
            actions = {a: int(rng.integers(5)) for a in ref.agents}
            o1, r1, _, t1, _ = ref.step(actions)
            o2, r2, _, t2, _ = lean.step(actions)
            steps += 1
            assert o1.keys() == o2.keys() and all(np.array_equal(o1[a], o2[a]) for a in o1)
            assert dict(r1) == r2 and t1 == t2 and list(ref.agents) == list(lean.agents)
        assert steps == MAX_CYCLES and not lean.agents


@pytest.mark.parametrize("kind", ["I", "II", "III"])
def test_no_single_metadata_field_separates_poison(worlds, kind: str) -> None:
    w = worlds[kind]
    records = list(w.memory.store.iter_records())
    labels = np.array([w.truth[r.id].label for r in records])
    sep = field_separability(records, labels)
    assert set(sep) >= {"confidence", "success", "reward", "channel", "agent", "tag", "time"}
    assert max(sep.values()) <= 0.75, sep


@pytest.fixture
def extra_detector():
    """A detector registered by a test: it must show up in the bench without editing it."""
    from misguard.memory._detectors import CredibilityDetector

    name = "test_inverted_credibility"

    class Inverted(CredibilityDetector):
        def score(self, data):  # noqa: ANN001, ANN201
            return data.cred.credibility

    DETECTORS.register(name, supervised=False, label="test plug-in")(lambda seed=0, **_: Inverted(name=name))
    yield name
    DETECTORS._entries.pop(name)


def test_cli_contract_registry_and_resume(tmp_path, extra_detector: str) -> None:
    runner = CliRunner()
    args = ["bench", "memory", "--ratio", "0.05", "--type", "II", "--seeds", "1", "--records", "1500", "--scenarios", "5",
            "--encoder-steps", "20", "--eval-steps", "8", "--methods", f"credibility,{extra_detector}", "--output", str(tmp_path)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    keys = {"auc", "fpr", "misbehavior_before", "misbehavior_after", "hops_before", "hops_after"}
    assert keys <= set(summary) and set(summary["baselines"]) == {"credibility", extra_detector}
    for block in summary["baselines"].values():
        assert keys <= set(block) and {"repair_coverage", "collateral"} <= set(block["details"])
    # The plug-in scores credibility upside down: the bench must report it as worse, not hide it.
    assert summary["baselines"][extra_detector]["auc"] < summary["baselines"]["credibility"]["auc"]
    assert max(summary["field_separability_max"].values()) <= 0.75
    assert "Table 2" in res.output
    first = json.loads((tmp_path / "runlog.jsonl").read_text().splitlines()[0])
    assert first["kind"] == "bench.memory" and first["components"]["environment"]["package"] == "mpe2"
    res2 = runner.invoke(app, args)
    assert res2.exit_code == 0 and "skipped" in res2.output
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
    res = runner.invoke(app, ["bench", "memory", "--methods", "credibility,nope", "--output", str(tmp_path)])
    assert res.exit_code == 2 and "nope" in res.output
