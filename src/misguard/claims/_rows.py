"""The output row of one checked text (`misguard check --input`, JSON lines)."""

from __future__ import annotations

from ..types import Claim, Verdict


def verdict_row(row_id: str, verdict: Verdict) -> dict[str, object]:
    """The JSONL row `misguard check --input` writes for one input."""
    ev = verdict.evidence[0] if verdict.evidence else None
    claim: Claim | None = ev.claim if ev and verdict.flagged else None
    return {
        "id": row_id,
        "flagged": verdict.flagged,
        "score": round(float(verdict.score), 6),
        "matched_claim_id": claim.id if claim else None,
        "matched_claim_text": claim.text if claim else None,
        "matched_claim_verdict": claim.verdict.value if claim else None,
        "matched_claim_verdict_original": claim.verdict_original if claim else None,
        "matched_claim_url": claim.url if claim else None,
        "evidence": {"text": ev.text, "start": ev.start, "end": ev.end, "similarity": ev.score} if ev else None,
        # the claim the text matches best, flagged or not (a true-rated one is never flagged)
        "nearest_claim_id": ev.claim.id if ev and ev.claim else None,
        "nearest_claim_text": ev.claim.text if ev and ev.claim else None,
        "nearest_claim_verdict": ev.claim.verdict.value if ev and ev.claim else None,
        "candidates": [{"claim_id": c.claim_id, "score": c.score} for c in verdict.candidates],
        "language": verdict.language,
        "topics": verdict.topics,
        "stages": verdict.stages,
        "decided_by": verdict.decided_by,
        "latency_s": round(verdict.latency_s, 6),
    }
