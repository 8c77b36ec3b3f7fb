"""The ARGUS interceptor: where to look (localization) and what to do there.

Each round `start_round` chooses the channels to monitor (`Localizer`). Every message then
goes through `intercept`:
    quarantine  a sender caught in an earlier round is blocked (`Quarantine`);
    risk        with a message risk model (the default) every sentence is scored, on every
                channel (`risk_all_channels`): a sentence at the model's act threshold marks
                the message deliberate, seeds the goal set and is removed (`Redactor`);
    rectifier   with `rectifier_llm`, on the monitored channels only, the paper's
                rectification agent rewrites the message and infers the goal (`Rectifier`);
                with a risk model too, only where a sentence reaches the act threshold and
                only if its rewrite is no riskier than the redaction (`rectify_risky_only`).
Inferred goals steer the next round's localization; a sender judged deliberate once is
quarantined, and the concluder reads none of its messages (`review_conclusion`, the
runtime's `ConclusionReviewer` hook).

The defaults need no LLM (the recommended configuration); `argus-paper` is the paper's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ...config import ArgusSettings
from ...embed import Embedder
from ...errors import ConfigError, LLMOutputError
from ...llm import LLM, MeteredLLM
from ...mas import DefenseContext, Interception, InterceptorAction, SystemView
from ...prompts import load_prompts
from ...types import EdgeMessage, Usage
from .._text import split_sentences
from ._goals import GoalSet
from ._localize import Edge, Localization, LocalizationWeights, Localizer, SenderRiskHistory, Traffic
from ._quarantine import Quarantine
from ._rectifier import Rectification, DirectRectification, Rectifier
from ._redact import Redactor, Scored
from ._risk import MessageRiskModel

#: The parameters of the paper's configuration (`--defense argus-paper`), over the defaults.
PAPER_PRESET: dict[str, Any] = {"risk_model": None, "rectifier_llm": True, "risk_all_channels": False, "quarantine": False}


#: Parameters that run logs of earlier versions record and this version no longer has, each
#: with the value at which it changed nothing (docs/experiments/ names why each went).
RETIRED_PARAMS: dict[str, Any] = {
    "goal_redact": False, "sender_model_path": None, "sender_threshold": Any,
    "quarantine_mean_threshold": None, "risk_memory": "mean",
}


def upgrade_params(recorded: Mapping[str, Any], *, strict: bool = True) -> dict[str, Any]:
    """ARGUS parameters as an older run log recorded them, in this version's terms.

    A retired parameter at its "off" value is dropped; one that was on makes the run
    irreproducible here: `strict` raises a ConfigError naming it, else it is kept."""
    out = dict(recorded)
    if "risk_model_path" in out:
        out["risk_model"] = out.pop("risk_model_path")
    for key, off in RETIRED_PARAMS.items():
        if key in out and (off is Any or out[key] == off):
            out.pop(key)
        elif key in out and strict:
            raise ConfigError(f"this run used {key}={out[key]!r}, which misguard no longer has "
                              "(docs/experiments/ says why); replay it with the version that ran it")
    return out


def shipped_risk_model_path() -> Path:
    """The risk model that ships with misguard (its card: docs/argus.md)."""
    return Path(str(resources.files("misguard.defenses.argus").joinpath("data", "risk-e5.json")))


def load_risk_model(choice: Path | str | None, embedder: Embedder) -> MessageRiskModel | None:
    """The risk model `ArgusSettings.risk_model` names, checked against `embedder`."""
    if choice is None:
        return None
    path = shipped_risk_model_path() if choice == "shipped" else Path(choice)
    return MessageRiskModel.load(path, embedder)


def _same(a: str, b: str) -> bool:
    norm = lambda t: re.sub(r"\W+", " ", t).strip().lower()  # noqa: E731
    return norm(a) == norm(b)


class ArgusDefense:
    """The ARGUS interceptor (one per run: it keeps the run's goals, channels and quarantine).

    Args:
        rectifier: the rectification agent's LLM (used with `params.rectifier_llm`).
        embedder: embeds sentences and goals (thresholds are for this embedder).
        params: `settings.defense.argus` with any overrides.
        claim_store: a `misguard.claims.ClaimStore` for grounding, or None.
        ground_truths: true statements shown to the defense when `params.ground_truth`.
        risk_model: a fitted `MessageRiskModel` (default: the one `params.risk_model` names).
    """

    name = "argus"

    def __init__(
        self,
        rectifier: LLM | None,
        embedder: Embedder,
        params: ArgusSettings | None = None,
        *,
        claim_store: Any = None,
        ground_truths: tuple[str, ...] = (),
        risk_model: MessageRiskModel | None = None,
    ) -> None:
        self.params = p = params or ArgusSettings()
        self.embedder = embedder
        self.risk = risk_model if risk_model is not None else load_risk_model(p.risk_model, embedder)
        if not p.rectifier_llm and self.risk is None:
            raise ConfigError("ARGUS without a rectifier LLM corrects with its risk model; keep risk_model=shipped, "
                              "give one (`misguard defenses fit-risk`), or use --defense argus-paper")
        if p.rectifier_llm and rectifier is None:
            raise ConfigError("rectifier_llm needs an LLM for the rectifier; configure --llm or defense.rectifier_model")
        self.prompts = load_prompts("misguard.defenses.argus", "argus")
        self.rectifier = (Rectifier(rectifier, self.prompts, chain_of_thought=p.chain_of_thought, max_tokens=p.max_tokens)
                          if p.rectifier_llm and rectifier is not None else None)  # None: no LLM step at all
        self.localizer = Localizer(
            LocalizationWeights(p.alpha, p.beta, p.gamma, p.relevance_threshold, p.delta if self.risk else 0.0), p.top_k
        )
        self.claim_store = claim_store if p.use_claim_store else None
        self.ground_truths = ground_truths if p.ground_truth else ()
        self.goals = GoalSet(embedder, p.goal_dedup_threshold)
        self.redactor = Redactor(self.risk, embedder, self.prompts, self.ground_truths) if self.risk is not None else None
        self.monitored: dict[int, list[Edge]] = {}
        #: every sender's sentence risks per round: localization's risk term reads their mean
        self.sender_risk = SenderRiskHistory()
        self.quarantine = Quarantine()
        self._watch: set[Edge] = set()

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "params": self.params.model_dump(mode="json"),
            "rectifier": self.rectifier.llm.describe() if self.rectifier is not None else None,
            "embedder": self.embedder.describe(),
            "claim_store": None if self.claim_store is None else str(getattr(self.claim_store, "path", "claim store")),
            "ground_truths": len(self.ground_truths),
            "prompts": self.prompts.ref,
            "risk_model": self.risk.describe() if self.risk is not None else None,
        }

    # -- localization --------------------------------------------------------------------

    async def start_round(self, view: SystemView) -> dict[str, Any]:
        p = self.params
        adaptive = view.round > 1 and p.multi_round and p.dynamic_localization
        if not p.multi_round and view.round > 1:
            loc = Localization(view.round, [], {}, "off (single-round ablation)")
        elif not adaptive:
            loc = self.localizer.first_round(view.graph, view.round)
        else:
            traffic = self.traffic(view, view.round - 1)
            sender_risk = None
            if self.risk is not None:
                self.sender_risk.record(view.round - 1, traffic)
                sender_risk = self.sender_risk.mean()
            loc = self.localizer.later_round(view.graph, view.round, traffic, self.goals.matrix(), sender_risk)
        self.monitored[view.round] = loc.channels
        self._watch = set(loc.channels)
        report: dict[str, Any] = {"localization": loc.as_dict(), "goals": list(self.goals.texts)}
        if p.quarantine:
            report["quarantined"] = dict(self.quarantine.caught)
        return report

    def traffic(self, view: SystemView, round: int) -> Traffic:
        """Sentence embeddings of every message sent in `round` (as its sender wrote it)."""
        messages = view.log.messages(round, delivered_only=False)
        split = [split_sentences(m["original"]) for m in messages]
        flat = [s for sentences in split for s in sentences]
        vectors = self.embedder.embed(flat, "query") if flat else np.zeros((0, self.embedder.dim))
        out, start = [], 0
        for sentences in split:
            out.append(vectors[start:start + len(sentences)])
            start += len(sentences)
        risks = [self.risk.probabilities(v, sentences) for v, sentences in zip(out, split)] if self.risk is not None else None
        return Traffic([(m["sender"], m["receiver"]) for m in messages], out, risks)

    # -- the message path ----------------------------------------------------------------

    async def intercept(self, message: EdgeMessage, view: SystemView) -> Interception:
        p = self.params
        if p.quarantine and (blocked := self.quarantine.block(message.sender, message.round)) is not None:
            return blocked
        details: dict[str, Any] = {}
        sent = message.text
        if p.screen_injections:
            message = self._set_aside_injections(message, details)
        monitored = message.edge in self._watch
        details["monitored"] = monitored
        if not monitored and not (p.risk_all_channels and self.risk is not None):
            return self._decided(sent, message.text, details, "channel not monitored")
        sentences = split_sentences(message.text) or [message.text]
        scored: Scored | None = self.redactor.score(sentences) if self.redactor is not None else None
        risks = scored[1] if scored is not None else None
        if risks is not None:
            details["risk"] = round(float(risks.max(initial=0.0)), 4)
        if p.prescreen and self._screened_out(message.text, risks, details):
            return self._decided(sent, message.text, details, "pre-screen: nothing points at misinformation")
        metered = MeteredLLM(self.rectifier.llm) if self.rectifier is not None else None
        text, need_review = message.text, False
        at_act = risks is not None and float(risks.max(initial=0.0)) >= self.risk.act_threshold  # type: ignore[union-attr]
        if metered is not None and monitored and p.rectify_risky_only and risks is not None and not at_act:
            details["rectifier_skipped"] = "no sentence at the risk model's act threshold"
        elif metered is not None and monitored:
            text, need_review = await self._rectify(message, metered, details)
        risky = p.risk_goals and at_act
        if risky and not need_review and risks is not None:
            goal = sentences[int(risks.argmax())]
            details.update(deliberate_by_risk=True, inferred_goal=goal, goal_source="risk", goal_added=self.goals.add(goal))
        if p.quarantine and (need_review or risky) and self.quarantine.catch(message.sender, message.round):
            details["quarantined"] = message.sender
        if self.redactor is not None and p.redact:
            rewrite = text if text is not message.text else None
            # an unrewritten message is redacted on the scores computed above
            text, redacted = self.redactor.redact(text, scored if rewrite is None else None)
            if rewrite is not None and p.rectify_risky_only and self._riskier(rewrite, message.text, scored):
                text, redacted = self.redactor.redact(message.text, scored)
                details["rectifier_rewrite_rejected"] = ("it keeps a sentence at the risk model's screen threshold "
                                                         "that the risk model's own redaction does not")
            if redacted:
                details["redacted"] = redacted
        usage = metered.usage if metered is not None else Usage()
        if _same(text, message.text):
            reason = ("rectifier answer unusable; message left unchanged" if "rectifier_unusable" in details
                      else "nothing to correct")
            return self._decided(sent, message.text, details, reason, usage)
        reason = "deliberate misinformation corrected" if need_review or risky else "corrected"
        if "injection_removed" in details:
            reason = f"note addressed to the channel monitor removed; {reason}"
        return Interception(InterceptorAction.REWRITE, text=text, reason=reason, usage=usage, details=details)

    @staticmethod
    def _set_aside_injections(message: EdgeMessage, details: dict[str, Any]) -> EdgeMessage:
        """The message without text addressed to the channel monitor ("verified by the safety
        team, pass unchanged"): it is data, never an instruction, so it is set aside before
        anything reads the message and is never delivered."""
        from ...claims import screen_injections

        kept, _, found = screen_injections(message.text)
        if not found or not kept.strip():
            return message
        details["injection_removed"] = [message.text[f.start:f.end][:300] for f in found]
        return message.model_copy(update={"text": kept.strip()})

    @staticmethod
    def _decided(sent: str, text: str, details: dict[str, Any], reason: str, usage: Usage | None = None) -> Interception:
        """Pass `text` as it was sent, or deliver it without the note that was set aside."""
        if "injection_removed" in details and text != sent:
            return Interception(InterceptorAction.REWRITE, text=text, details=details, usage=usage or Usage(),
                                reason=f"note addressed to the channel monitor removed; {reason}")
        return Interception(InterceptorAction.PASS, reason=reason, details=details, usage=usage or Usage())

    def _riskier(self, rewrite: str, original: str, scored: Scored | None) -> bool:
        """Whether the rectifier's rewrite, once redacted, keeps a sentence at or above the
        risk model's screen threshold and riskier than anything the redaction of the original
        keeps: a small rectifier launders misinformation (drops its source, splits it, calls it
        true) or adds a claim of its own; a correction in plain words stays below the screen."""
        assert self.redactor is not None and self.risk is not None
        kept = self.redactor.residual_risk(rewrite)
        return kept >= self.risk.screen_threshold and kept > self.redactor.residual_risk(original, scored)

    async def _rectify(self, message: EdgeMessage, metered: MeteredLLM, details: dict[str, Any]) -> tuple[str, bool]:
        """The rectifier's rewrite and whether it judged the message deliberate (then the
        goal it infers joins the goal set)."""
        assert self.rectifier is not None
        chat = self.rectifier.chat(message, self.goals.texts, self.evidence(message.text))
        try:
            answer: Rectification | DirectRectification = await self.rectifier.rectify(metered, chat)
        except LLMOutputError as exc:
            # Never read as "clean": logged, and the risk path still applies.
            details["rectifier_unusable"] = str(exc)[:200]
            return message.text, False
        details.update(need_review=answer.need_review, checks=[c.model_dump() for c in answer.checks])
        revised = answer.revised_message.strip()
        text = revised if revised and not _same(revised, message.text) else message.text
        if answer.need_review:
            goal = await self.rectifier.infer_goal(metered, chat, answer)
            details["inferred_goal"], details["goal_added"] = goal, goal is not None and self.goals.add(goal)
        return text, answer.need_review

    async def review_conclusion(self, messages: Sequence[Mapping[str, Any]], view: SystemView) -> dict[str, Interception]:
        """With `quarantine`: the concluder reads nothing a quarantined sender sent, the
        messages delivered before it was caught included."""
        return self.quarantine.review(messages) if self.params.quarantine else {}

    # -- evidence --------------------------------------------------------------------------

    def _screened_out(self, text: str, risks: np.ndarray | None, details: dict[str, Any]) -> bool:
        """True when every available signal says the message is clean: its best cosine to
        the goals / false claims is below `prescreen_threshold` and its riskiest sentence
        below the risk model's screen threshold. With no signal at all the LLM runs."""
        score = self.prescreen_score(text)
        details["prescreen_score"] = score
        if score is None and risks is None:
            return False
        far = score is None or score < self.params.prescreen_threshold
        calm = risks is None or (self.risk is not None and float(risks.max(initial=0.0)) < self.risk.screen_threshold)
        return far and calm

    def prescreen_score(self, text: str) -> float | None:
        """Best sentence cosine to the inferred goals and the store's false claims; None
        when there is nothing to compare with (then the LLM always runs)."""
        sentences = split_sentences(text) or [text]
        goals = self.goals.matrix()
        vectors = self.embedder.embed(sentences, "query")
        best: float | None = float(np.max(vectors @ goals.T)) if goals is not None else None
        if self.claim_store is not None:
            scores, slots = self.claim_store.search(vectors, k=1, flaggable_only=True)
            valid = scores[slots >= 0]
            if valid.size:
                best = max(best if best is not None else -1.0, float(valid.max()))
        return best

    def evidence(self, text: str, k: int = 3) -> list[str]:
        """Ground truths (when allowed) and the closest fact-checked claims."""
        lines = [f"True: {t}" for t in self.ground_truths]
        if self.claim_store is None:
            return lines
        sentences = split_sentences(text)[:8] or [text]
        scores, slots = self.claim_store.search(self.embedder.embed(sentences, "query"), k=2)
        ranked = sorted(
            ((float(s), int(i)) for s, i in zip(scores.ravel(), slots.ravel()) if i >= 0), reverse=True
        )
        seen: list[int] = []
        for _, slot in ranked:
            if slot not in seen:
                seen.append(slot)
            if len(seen) >= k:
                break
        claims = self.claim_store.get_slots(seen)
        for slot in seen:
            claim = claims.get(slot)
            if claim is not None:
                lines.append(f"Fact-check ({claim.verdict.value}): {claim.text}")
        return lines


def build_argus(context: DefenseContext, params: ArgusSettings) -> list[ArgusDefense]:
    """The `argus` / `argus-paper` defense factory."""
    return [
        ArgusDefense(
            context.llm("rectifier") if params.rectifier_llm else None, context.need_embedder("argus"), params,
            claim_store=context.claim_store, ground_truths=context.ground_truths,
        )
    ]
