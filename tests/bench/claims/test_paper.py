"""The paper-style query builder (no shared data needed)."""

import pytest

from misguard.bench.claims._paper import LONG_TEXT_WORDS, paper_queries
from misguard.claims import clean_text, segment, strip_instructions
from misguard.types import Claim


def _claims(prefix: str, verdict: str, n: int) -> list[Claim]:
    return [Claim(id=f"{prefix}{i}", text=f"{prefix} statement number {i} about budget item {i * 7}", verdict=verdict)
            for i in range(n)]


def test_each_claim_gets_three_offline_attacks_and_is_findable_in_each():
    false, true = _claims("F", "false", 10), _claims("T", "true", 40)
    queries = paper_queries(false, true, 5, seed=3)
    assert len(queries) == 5 * 2 * 3
    assert {q.attack for q in queries} == {"direct", "mcq", "summarize"}
    assert sum(q.label == "false" for q in queries) == 15
    for q in queries:
        body = strip_instructions(clean_text(q.text))[0]
        # The claim survives each wrapping as a whole segment (sentence or MCQ option).
        assert any(s.text.rstrip(".") == q.claim_text for s in segment(body)), q.key
        if q.attack == "summarize":
            assert len(body.split()) >= LONG_TEXT_WORDS
    negatives = {q.claim_id for q in queries if q.label == "true"}
    # Filler never contains a negative's own text (or any false claim).
    for q in queries:
        if q.attack == "summarize":
            others = {t.text for t in true if t.id in negatives and t.id != q.claim_id}
            assert not any(o in q.text for o in others)
            assert not any(f.text in q.text for f in false if f.id != q.claim_id)


def test_queries_are_reproducible_and_seeded():
    false, true = _claims("F", "false", 10), _claims("T", "true", 40)
    assert paper_queries(false, true, 4, seed=1) == paper_queries(false, true, 4, seed=1)
    assert paper_queries(false, true, 4, seed=1) != paper_queries(false, true, 4, seed=2)


def test_too_little_filler_is_a_clear_error():
    with pytest.raises(ValueError, match="filler"):
        paper_queries(_claims("F", "false", 2), _claims("T", "true", 2), 2, seed=0)


def test_translation_attacks_go_through_the_llm_and_failures_are_retried(tmp_path):
    import io

    from rich.console import Console

    from misguard.bench.claims._paper import run_paper
    from misguard.claims import AttackGenerator, ClaimGuard, ClaimStore, ThresholdDecision
    from misguard.config import load_settings
    from misguard.embed import get_embedder
    from misguard.errors import LLMRequestError
    from misguard.llm._mock import MockLLM
    from misguard.runlog import RunHeader, RunLog

    false, true = _claims("F", "false", 4), _claims("T", "true", 20)
    store = ClaimStore.open(tmp_path / "s", get_embedder("hashing/64"), create=True)
    store.add(false)
    guard = ClaimGuard(store, decision=ThresholdDecision(0.5))
    settings = load_settings(llm={"model": "mock"})
    console = Console(file=io.StringIO())

    def open_log():
        header = RunHeader(kind="test.paper", settings={}, components={}, seeds={}, params={})
        return RunLog.open(tmp_path / "log.jsonl", header, resume=True)

    # Each translation is two calls (expand, translate); the very first expand fails.
    llm = MockLLM(respond=lambda messages: "Le texte traduit.")
    llm.enqueue(LLMRequestError("bad request"))  # not transient: reported at once
    with open_log() as log:
        run_paper(settings, guard, false, true, 1, True, log, console, generator=AttackGenerator(llm))
        rows = {e.key: e.data for e in log.of_type("paper")}
        failed = {e.key for e in log.of_type("paper_query") if "error" in e.data}
    assert len(failed) == 1
    made = [k for k in rows if k.startswith("translate-")]
    assert len(made) == 2 * 5 - 1  # one false + one true claim x five languages, one failed
    assert all(rows[k]["attack"] == "translate" for k in made)
    # A second run retries the failed one and re-asks nothing else.
    llm2 = MockLLM(respond=lambda messages: "Texto traducido.")
    with open_log() as log:
        run_paper(settings, guard, false, true, 1, True, log, console, generator=AttackGenerator(llm2))
        rows = {e.key: e.data for e in log.of_type("paper")}
    assert len(llm2.calls) == 2 and len([k for k in rows if k.startswith("translate-")]) == 2 * 5
    store.close()
