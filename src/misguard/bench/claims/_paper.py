"""The paper's Table 1 on the fact-checked data sets themselves.

Positives are false claims that are in the store (LIAR pants-fire/false/barely-true,
Snopes false/mostly-false); negatives are held-out TRUE claims of the same publishers
(LIAR true/mostly-true, Snopes true/mostly-true), which are never stored. Each claim is
attacked the paper's way, offline:
- direct: "Does this text contain misinformation? <claim>";
- mcq: the claim as one option of a "why" question, next to three other true statements
  (`mcq_template`, no LLM);
- summarize: the claim buried at a random place in a ~450-word text of other true
  statements (the offline stand-in for the paper's LLM-written long text);
- translate (fr, es, ar, hi, zh): only with `--paper-translate`, through the paper's
  attacker prompts on the configured LLM (a capable endpoint; the bundled 135M model
  cannot translate).
The decision is the one fitted on the multilingual dev set in the same run, so these
figures are out of sample for it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console

from ...claims import LANGUAGES, AttackGenerator, ClaimGuard, mcq_template, read_claims, wrap
from ...config import Settings
from ...errors import LLMError
from ...runlog import RunLog
from ...types import Claim

_LIAR_TRUE = {"true", "mostly-true"}
_SNOPES_TRUE = {"true", "mostly-true"}
#: Words of filler around the claim in the offline summarize attack (the paper: ~500).
LONG_TEXT_WORDS = 450


@dataclass(frozen=True)
class PaperQuery:
    key: str
    claim_id: str
    label: str  # "false" (a stored claim) or "true" (held out)
    attack: str
    lang: str
    text: str
    claim_text: str


def load_true_claims(data_dir) -> list[Claim]:
    """Held-out true-rated claims (never put in the store)."""
    liar = data_dir / "claims" / "liar"
    out: list[Claim] = []
    for split in ("train", "valid", "test"):
        out += [c for c in read_claims(liar / f"{split}.tsv", "liar") if c.verdict_original in _LIAR_TRUE]
    snopes = data_dir / "claims" / "snopes-cs598gw" / "snopes_claims.jsonl"
    out += [c for c in read_claims(snopes, "snopes") if c.verdict_original in _SNOPES_TRUE]
    return out


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text[-1:] in ".!?" else text + "."


def paper_queries(false_pool: Sequence[Claim], true_pool: Sequence[Claim], n: int, seed: int) -> list[PaperQuery]:
    """n false and n true claims, each as a direct, MCQ and long-text attack (seeded)."""
    rng = random.Random(seed)
    positives = rng.sample(list(false_pool), min(n, len(false_pool)))
    negatives = rng.sample(list(true_pool), min(n, len(true_pool)))
    taken = {c.id for c in negatives}
    # Filler comes from other true claims, so a negative's long text holds no false claim.
    filler = [_sentence(c.text) for c in true_pool if c.id not in taken and c.text.strip()]
    filler = rng.sample(filler, min(600, len(filler)))
    if len(filler) < 3:
        raise ValueError("paper_queries needs at least three other true claims as filler")
    out: list[PaperQuery] = []
    for i, (label, claim) in enumerate([("false", c) for c in positives] + [("true", c) for c in negatives]):
        text = _sentence(claim.text)
        sentences: list[str] = []
        while sum(len(s.split()) for s in sentences) < LONG_TEXT_WORDS:
            sentences.append(rng.choice(filler))
        sentences.insert(rng.randrange(len(sentences) + 1), text)
        for attack, query in (
            ("direct", wrap("direct", claim.text)),
            ("mcq", mcq_template(claim.text, rng.sample(filler, 3), seed=seed + i)),
            ("summarize", wrap("summarize", " ".join(sentences))),
        ):
            out.append(PaperQuery(f"{attack}:{claim.id}", claim.id, label, attack, "en", query, claim.text))
    return out


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
