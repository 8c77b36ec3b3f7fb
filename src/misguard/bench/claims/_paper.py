"""The paper's Table 1 on the fact-checked data sets themselves, through the final guard.

Positives are false claims that are in the store (LIAR pants-fire/false/barely-true,
Snopes false/mostly-false); negatives are held-out TRUE claims of the same publishers
(LIAR true/mostly-true, Snopes true/mostly-true), which are never stored. Each claim is
attacked the paper's way, offline:
- direct, mcq and summarize: offline (`misguard.claims.paper_queries`); the decision is
  fitted on these rows too (out-of-fold figures in the decision's tables), so through the
  final guard they are in sample;
- translate (fr, es, ar, hi, zh): only with `--paper-translate`, through the paper's
  attacker prompts on the configured LLM (a capable endpoint); out of sample.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from ...claims import LANGUAGES, AttackGenerator, ClaimGuard, PaperQuery, paper_queries
from ...config import Settings
from ...errors import LLMError
from ...runlog import RunLog
from ...types import Claim


def run_paper(
    settings: Settings,
    guard: ClaimGuard,
    false_pool: Sequence[Claim],
    true_pool: Sequence[Claim],
    n: int,
    translate: bool,
    log: RunLog,
    console: Console,
    generator: AttackGenerator | None = None,
) -> None:
    """Check every paper-style query with `guard` and log one "paper" row each. With
    `translate`, `generator` (default: on the configured LLM) writes the translations."""
    queries = paper_queries(false_pool, true_pool, n, settings.seed)
    if translate:
        if generator is None:
            from ...llm import get_llm

            llm = get_llm(None, settings.llm)
            log.write("component", key="attack_llm", **llm.describe())
            generator = AttackGenerator(llm)
        queries += _translations(generator, queries, log, console)
    done = log.done_keys("paper")
    todo = [q for q in queries if q.key not in done]
    for start in range(0, len(todo), 32):
        batch = todo[start : start + 32]
        for q, verdict in zip(batch, guard.check_many([q.text for q in batch])):
            ev = verdict.evidence[0] if verdict.evidence else None
            log.write("paper", key=q.key, claim_id=q.claim_id, label=q.label, attack=q.attack, lang=q.lang,
                      flagged=verdict.flagged, score=verdict.score, matched=ev.claim.id if ev and ev.claim else None)
        console.print(f"paper-style queries: {min(start + 32, len(todo))}/{len(todo)}")


def _translations(generator: AttackGenerator, queries: list[PaperQuery], log: RunLog, console: Console) -> list[PaperQuery]:
    """The paper's translation attack on the direct queries' claims, through the LLM. A
    failed generation is logged as such and left out (it is not a query); a later run
    retries it."""
    made = {e.key: e.data for e in log.of_type("paper_query")}
    out: list[PaperQuery] = []
    direct = [q for q in queries if q.attack == "direct"]
    for n, q in enumerate(direct):
        for lang in LANGUAGES:
            key = f"translate-{lang}:{q.claim_id}"
            if "text" not in made.get(key, {}):  # new, or failed in an earlier run: (re)try
                try:
                    made[key] = {"text": generator.translate(q.claim_text, lang)}
                except LLMError as exc:
                    made[key] = {"error": f"{type(exc).__name__}: {exc}"}
                log.write("paper_query", key=key, **made[key])
            if "text" in made[key]:
                out.append(PaperQuery(key, q.claim_id, q.label, "translate", lang, str(made[key]["text"]), q.claim_text))
        if n % 10 == 0:
            console.print(f"translation attacks: {n + 1}/{len(direct)} claims")
    return out
