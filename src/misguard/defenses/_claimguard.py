"""The claim guard as a defense on the message path: every message is checked against a
store of fact-checked claims (`misguard.claims.ClaimGuard`); a message that repeats a known
false claim is flagged (a fact-check note appended), corrected (the matched span replaced by
the note) or blocked, as `settings.defense.claim_guard.mode` says. It needs no LLM: the
decision is the claim guard's offline one (or a plain cosine threshold)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..config import ClaimGuardDefenseSettings
from ..errors import ConfigError
from ..mas import DefenseContext, Interception, InterceptorAction, SystemView
from ..types import EdgeMessage, Usage, Verdict


def fact_check_note(verdict: Verdict) -> str:
    """The sentence a reader sees in place of (or after) a known false claim."""
    claim = verdict.evidence[0].claim if verdict.evidence else None
    if claim is None:
        return "[Fact-check: this statement matches a claim rated false.]"
    rating = claim.verdict_original or claim.verdict.value
    source = f" by {claim.publisher}" if claim.publisher else ""
    return f"[Fact-check: the claim \"{claim.text}\" was rated {rating}{source}.]"


class ClaimGuardInterceptor:
    """Checks each message with a `ClaimGuard`.

    Args:
        guard: a `misguard.claims.ClaimGuard` over the claims to catch.
        params: `settings.defense.claim_guard` (the mode).
    """

    name = "claim-guard"

    def __init__(self, guard: Any, params: ClaimGuardDefenseSettings | None = None) -> None:
        self.guard = guard
        self.params = params or ClaimGuardDefenseSettings()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "params": self.params.model_dump(mode="json"), "guard": self.guard.describe()}

    async def start_round(self, view: SystemView) -> None:
        return None

    async def intercept(self, message: EdgeMessage, view: SystemView) -> Interception:
        started = time.perf_counter()
        # The check embeds the text (CPU work under the guard's own lock): off the event loop.
        verdict: Verdict = await asyncio.to_thread(self.guard.check, message.text)
        usage = Usage(latency_s=time.perf_counter() - started)
        ev = verdict.evidence[0] if verdict.evidence else None
        details: dict[str, Any] = {"flagged": verdict.flagged, "score": round(float(verdict.score), 6),
                                   "decided_by": verdict.decided_by}
        if ev is not None and ev.claim is not None:
            details.update(claim_id=ev.claim.id, claim=ev.claim.text[:300], span=[ev.start, ev.end])
        if not verdict.flagged:
            return Interception(InterceptorAction.PASS, reason="no known false claim", usage=usage, details=details)
        note = fact_check_note(verdict)
        mode = self.params.mode
        if mode == "block":
            return Interception(InterceptorAction.BLOCK, reason="repeats a known false claim", usage=usage, details=details)
        if mode == "correct" and ev is not None and ev.end > ev.start:
            text = message.text[: ev.start] + note + message.text[ev.end:]
        else:
            text = f"{message.text.rstrip()}\n{note}"
        return Interception(InterceptorAction.REWRITE, text=text, reason=f"known false claim ({mode})",
                            usage=usage, details=details)


def build_claim_guard(context: DefenseContext, params: ClaimGuardDefenseSettings) -> list[ClaimGuardInterceptor]:
    if context.claim_store is None:
        raise ConfigError("defense 'claim-guard' needs a claim store: pass claim_store=ClaimStore.open(...) "
                          "(build one with `misguard claims add --db DIR FILE`), or --claims-db DIR")
    from ..claims import ClaimGuard, ThresholdDecision

    decision = ThresholdDecision(params.threshold) if params.threshold is not None else None
    return [ClaimGuardInterceptor(ClaimGuard(context.claim_store, decision=decision), params)]
