"""The paper's LLM translation attacks through the final guard (no shared data needed)."""

from misguard.types import Claim


def _claims(prefix: str, verdict: str, n: int) -> list[Claim]:
    return [Claim(id=f"{prefix}{i}", text=f"{prefix} statement number {i} about budget item {i * 7}", verdict=verdict)
            for i in range(n)]


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
