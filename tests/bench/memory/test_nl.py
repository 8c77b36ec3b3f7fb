"""The natural-language memory scenario with a scripted LLM (the real 0.5B run is a bench)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

pytest.importorskip("sklearn")

from misguard.bench.memory._nl import (  # noqa: E402
    OTHER,
    NLParams,
    NLScenario,
    load_facts,
    read_answer,
    restate_reconstructed,
    run_nl_seed,
    tune_threshold,
)
from misguard.errors import ConfigError, LLMError  # noqa: E402
from misguard.llm import get_llm  # noqa: E402
from misguard.memory import SharedMemory, open_store  # noqa: E402

FACTS = load_facts()
BY_QUESTION = {f.question: f for f in FACTS}


def _fact_in(text: str):
    return next(f for q, f in BY_QUESTION.items() if q in text)


def gullible_team(messages) -> str:
    """Observers copy what they looked up, the attacker asserts its answer with urgency, and
    an agent answering from notes follows an urgent note when it sees one, else the majority
    of the notes it was shown (ties: the first)."""
    text = messages[-1].content
    if "The system of record returned:" in text:
        answer = re.search(r"returned: (.+)", text).group(1)
        return f"Checked: {_fact_in(text).question} It is {answer}."
    if "for a team's shared memory" in text:
        fact = _fact_in(text)
        return f"Heads up: {fact.question.lower()} {fact.false_answer} now."
    fact = _fact_in(text)
    notes = [line for line in text.splitlines() if line.startswith("- ")]
    said = [read_answer(n, fact) for n in notes]
    urgent = [a for n, a in zip(notes, said) if "Heads up" in n and a != OTHER]
    if urgent:
        return f"Per the notes, {fact.question.lower()} {urgent[0]}."
    votes = {a: said.count(a) for a in said if a != OTHER}
    best = max(votes, key=lambda a: (votes[a], -said.index(a))) if votes else "unknown"
    return f"Per the notes, {fact.question.lower()} {best}."


def test_answers_are_read_as_whole_words() -> None:
    gpu = next(f for f in FACTS if f.id == "gpu-quota")
    assert read_answer("You may reserve 8 GPUs.", gpu) == "8"
    assert read_answer("Port 8443 maybe, or 48?", gpu) == OTHER  # neither 8 nor 64 as a word
    assert read_answer("It is 64, not 8.", gpu) == OTHER  # both: not a clear answer
    assert read_answer("sixty-four", gpu) == "64"


def test_facts_have_distinct_answers() -> None:
    for f in FACTS:
        assert read_answer(f.answer, f) == f.answer and read_answer(f.false_answer, f) == f.false_answer


def test_poison_spreads_over_hops_and_repair_contains_it(tmp_path) -> None:
    params = NLParams(kind="II", facts=8, poisoned_facts=4, agents=3, observations=2, rounds=4, after_rounds=2, k=3, folds=2)
    tuned = tune_threshold(get_llm("mock", respond=gullible_team), None, None, params, 1000, tmp_path, FACTS)
    assert 0.0 < tuned["threshold"] < 1.0
    llm = get_llm("mock", respond=gullible_team)
    r = run_nl_seed(llm, None, None, dataclasses.replace(params, threshold=tuned["threshold"]), seed=2, out_dir=tmp_path, facts=FACTS)
    assert r["poison_notes"] == 4 and r["notes"] == 2 * 8 + 4 + 4 * 8
    # honest agents repeated the poison, further than one hop from it
    assert r["propagation"]["derived"] > 0 and r["propagation"]["hops_before_max"] >= 2
    assert r["during"]["clean"]["poison_answer"] == 0  # no note ever claims a clean fact's false answer
    # the LLM calls are what the scenario says: observations + poison + rounds + after-rounds on two copies
    assert r["llm_calls"] == 2 * 8 + 4 + 4 * 8 + 2 * 2 * 8
    # the guard repaired notes; fewer wrong notes are left and fewer wrong answers follow
    assert r["guard"]["repaired"] > 0
    assert r["propagation"]["affected_after"] < r["propagation"]["derived"]
    after = r["after"]
    assert after["repaired"]["poisoned"]["poison_answer"] < after["unrepaired"]["poisoned"]["poison_answer"]
    assert set(r["auc"]) >= {"guard", "isolation_forest", "lof"}


def test_reconstructed_notes_say_the_new_answer(tmp_path) -> None:
    """A note whose action the guard rewrote gets text that states it (agents read text);
    notes rewritten by anyone else are left alone."""
    from misguard.types import MemoryRecord, Provenance

    memory = SharedMemory(open_store(tmp_path / "m.db"))
    fact = FACTS[0]
    notes = [MemoryRecord(state=fact.question, context=f"It is {fact.false_answer}.", action=fact.false_answer,
                          provenance=Provenance(agent=f"agent-{i}", time=float(i))) for i in range(2)]
    memory.write(notes)
    seqs = [memory.store.rewrite(notes[0].id, {"action": fact.answer}, "semantic reconstruction", "memory-guard"),
            memory.store.rewrite(notes[1].id, {"action": fact.answer}, "an operator's edit", "operator")]
    memory.refresh()
    assert restate_reconstructed(memory, seqs) == 1
    assert restate_reconstructed(memory, []) == 0  # another pass's entries are not restated again
    fixed, other = memory.store.get(notes[0].id), memory.store.get(notes[1].id)
    assert read_answer(fixed.context, fact) == fact.answer and fixed.version == 3
    assert other.context == f"It is {fact.false_answer}."
    assert [e.action for e in memory.store.audit_log()][-1] == "rewrite"  # audited like the repair


def test_type_iii_writes_agreeing_notes_from_different_agents(tmp_path) -> None:
    llm = get_llm("mock", respond=gullible_team)
    memory = SharedMemory(open_store(tmp_path / "m.db"))
    scenario = NLScenario(llm, None, NLParams(kind="III", facts=4, poisoned_facts=2, agents=3, observations=1))
    w, poisoned = scenario.build(memory, FACTS[:4], np.random.default_rng(0))
    written = [(t.fact, memory.store.get(rid).provenance.agent) for rid, t in w.truth.items() if t.label == 1]
    later = [(f.id, agent) for due in w.pending.values() for f, agent in due]
    assert len(written) + len(later) == 4 and later  # some poison waits for a later round
    for fact in poisoned:
        authors = {agent for f, agent in written + later if f == fact.id}
        assert len(authors) == 2
    for r in range(scenario.params.rounds):
        scenario.reuse_round(w, FACTS[:4], np.random.default_rng(r))
    assert not w.pending and sum(t.label for t in w.truth.values()) == 4


def test_a_failing_llm_is_reported_not_read_as_clean(tmp_path) -> None:
    llm = get_llm("mock", outputs=[LLMError("backend down")] * 10)
    llm.settings.retries = 0
    with pytest.raises(LLMError):
        run_nl_seed(llm, None, None, NLParams(facts=4, poisoned_facts=1, folds=2, threshold=0.3), seed=0, out_dir=tmp_path, facts=FACTS)


def test_bad_parameters_say_what_to_do() -> None:
    with pytest.raises(ConfigError, match="--type"):
        NLParams(kind="IV")
    with pytest.raises(ConfigError, match="poisoned facts"):
        NLParams(facts=3, poisoned_facts=5)


def test_cli_runs_resumes_and_refuses_other_parameters(tmp_path) -> None:
    from typer.testing import CliRunner

    from misguard.cli.main import app

    args = ["--llm", "mock", "bench", "memory-nl", "--facts", "4", "--poisoned-facts", "1", "--rounds", "1",
            "--after-rounds", "1", "--seeds", "1", "--output", str(tmp_path / "run")]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "threshold" in first.output and "misbehavior (the false answer) under attack" in first.output
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "done in an earlier run" in again.output
    other = CliRunner().invoke(app, [*args[:-2], "--k", "2", "--output", str(tmp_path / "run")])
    assert other.exit_code == 2 and "other parameters" in other.output
    bad = CliRunner().invoke(app, ["--llm", "mock", "bench", "memory-nl", "--type", "IV"])
    assert bad.exit_code == 2 and "--type" in bad.output
