"""ARGUS: goal-aware localization and persuasive rectification on the message path.

Each round `start_round` chooses the channels to monitor (`Localizer`); a message on a
monitored channel goes to the rectification agent, which checks it sentence by sentence,
rewrites it persuasively and says whether it looks deliberate. A deliberate-looking message
triggers goal inference (a follow-up turn); goals are de-duplicated by embedding cosine into
the run's goal set that steers the next round's localization.

Beyond the paper: grounding (claim-store evidence and, when the experiment allows, the
task's ground truths), an embedding pre-screen that skips the LLM on messages far from the
inferred goals and known false claims, cost per message in the event log, and an evidence
path that needs no LLM: a message risk model (`_risk`) whose sentence scores add a term to
localization, seed the goal set, extend the pre-screen and redact the sentences it is
confident about that the rectifier left in (each replaced by the closest ground truth
when the defense has them). With `quarantine`, a sender judged deliberate once is cut off:
its later messages are blocked and the concluder reads none of its messages
(`review_conclusion`, the runtime's `ConclusionReviewer` hook). A G-Safeguard node detector
(`sender_model_path`) adds sender-level evidence: it scores every agent from what it wrote
in a round, and an agent above its threshold is quarantined as well; so is, with
`quarantine_mean_threshold`, a sender whose mean sentence risk so far is above that threshold.

A rectifier answer that stays unparseable after a re-ask leaves the message unchanged and
is logged as `rectifier_unusable` (never read as "clean"); backend failures propagate.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from ..claims._screen import screen
from ..config import ArgusSettings, GSafeguardSettings
from ..embed import Embedder
from ..errors import ConfigError, LLMOutputError
from ..llm import LLM
from ..mas import DefenseContext, Interception, InterceptorAction, MeteredLLM, SystemView
from ..prompts import PromptSet, load_prompts
from ..types import ChatMessage, EdgeMessage
from ._gsafeguard import GSafeguard
from ._localize import Edge, Localization, LocalizationWeights, Localizer, SenderRiskHistory, Traffic
from ._risk import MessageRiskModel
from ._text import replace_spans, sentence_spans, split_sentences


#: Sentence checks the rectifier may return per message (the suspicious ones).
MAX_CHECKS = 3


def _boolish(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().lower() in {"true", "yes", "1", "y"}
    return bool(value) if value is not None else False


class SentenceCheck(BaseModel):
    """One suspicious sentence compared with the rectifier's knowledge and the evidence."""

    model_config = ConfigDict(extra="ignore")

    sentence: str = Field("", max_length=400)
    verdict: Literal["agreement", "contradiction", "uncertainty"] = "uncertainty"
    confidence: Literal["high", "medium", "low"] = "low"
    correction: str = Field("", max_length=400)

    @field_validator("verdict", "confidence", mode="before")
    @classmethod
    def _label(cls, value: Any, info: Any) -> Any:
        # Models without constrained decoding write "Contradiction", "contradicts", "HIGH".
        text = str(value or "").strip().lower()
        labels = ("agreement", "contradiction", "uncertainty") if info.field_name == "verdict" else ("high", "medium", "low")
        return next((label for label in labels if text.startswith(label[:5])), labels[-1])

    @field_validator("sentence", "correction", mode="before")
    @classmethod
    def _clip(cls, value: Any) -> Any:
        return "" if value is None else str(value)[:400]


class _Answer(BaseModel):
    """Lenient reading of the fields every rectifier answer has."""

    model_config = ConfigDict(extra="ignore")

    @field_validator("need_review", mode="before", check_fields=False)
    @classmethod
    def _bool(cls, value: Any) -> Any:
        return _boolish(value)

    @field_validator("revised_message", mode="before", check_fields=False)
    @classmethod
    def _text(cls, value: Any) -> Any:
        return "" if value is None else value if isinstance(value, str) else str(value)

    @field_validator("checks", mode="before", check_fields=False)
    @classmethod
    def _checks(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return []
        return [c if isinstance(c, dict) else {"sentence": str(c)} for c in value][:MAX_CHECKS]


class Rectification(_Answer):
    """The rectifier's answer. Field order is the decoding order under a JSON schema: the
    sentence checks (the chain of thought) come before the rewrite they justify, at most
    `MAX_CHECKS` of them, so that a small model's answer fits its token budget. The rewrite
    is required: a fragment of a cut-off answer must not read as "nothing to correct"."""

    checks: list[SentenceCheck] = Field(default_factory=list, max_length=MAX_CHECKS)
    revised_message: str
    need_review: bool = False


class DirectRectification(_Answer):
    """The rectifier's answer without the sentence-by-sentence analysis (ablation). Checks
    are not asked for (left out of the decoding schema), but read if a model adds some."""

    revised_message: str
    need_review: bool = False
    checks: SkipJsonSchema[list[SentenceCheck]] = Field(default_factory=list)


class InferredGoal(BaseModel):
    model_config = ConfigDict(extra="ignore")

    goal: str | None = None

    @field_validator("goal", mode="before")
    @classmethod
    def _goal(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and value.strip().lower() in {"", "null", "none", "unknown"}):
            return None
        return str(value).strip()


@dataclass
class GoalSet:
    """Inferred adversary goals, de-duplicated by cosine (`threshold`)."""

    embedder: Embedder
    threshold: float
    texts: list[str] = field(default_factory=list)
    vectors: list[np.ndarray] = field(default_factory=list)

    def add(self, goal: str) -> bool:
        """Add `goal` unless it duplicates a known one; True when added."""
        vector = self.embedder.embed([goal], "query")[0]
        if self.vectors and float(np.max(np.stack(self.vectors) @ vector)) > self.threshold:
            return False
        self.texts.append(goal)
        self.vectors.append(vector)
        return True

    def matrix(self) -> np.ndarray | None:
        return np.stack(self.vectors) if self.vectors else None


def _quarantine_block(caught: int, by: str) -> Interception:
    """What happens to a message of a sender quarantined in round `caught` (`by`: "message"
    or "sender detector")."""
    return Interception(InterceptorAction.BLOCK, reason=f"sender quarantined in round {caught}",
                        details={"quarantined_in_round": caught, "quarantined_by": by})


def _same(a: str, b: str) -> bool:
    norm = lambda t: re.sub(r"\W+", " ", t).strip().lower()  # noqa: E731
    return norm(a) == norm(b)


class ArgusDefense:
    """The ARGUS interceptor (one per run: it keeps the run's goals and channels).

    Args:
        rectifier: the rectification agent's LLM (configured apart from the workers').
        embedder: embeds sentences and goals (thresholds are for this embedder).
        params: `settings.defense.argus` with any overrides.
        claim_store: a `misguard.claims.ClaimStore` for grounding, or None.
        ground_truths: true statements shown to the rectifier when `params.ground_truth`.
        risk_model: a fitted `MessageRiskModel` (default: loaded from `params.risk_model_path`).
        sender_model: a G-Safeguard node detector (default: loaded from `params.sender_model_path`).
    """

    name = "argus"

    def __init__(
        self,
        rectifier: LLM,
        embedder: Embedder,
        params: ArgusSettings | None = None,
        *,
        claim_store: Any = None,
        ground_truths: tuple[str, ...] = (),
        risk_model: MessageRiskModel | None = None,
        sender_model: GSafeguard | None = None,
    ) -> None:
        self.rectifier = rectifier
        self.embedder = embedder
        self.params = params or ArgusSettings()
        p = self.params
        if risk_model is None and p.risk_model_path is not None:
            risk_model = MessageRiskModel.load(p.risk_model_path, embedder)
        self.risk = risk_model
        if (sender_model is not None or p.sender_model_path is not None) and not p.quarantine:
            raise ConfigError("a sender detector acts only through quarantine; add --defense-param quarantine=true")
        if sender_model is None and p.sender_model_path is not None:
            sender_model = GSafeguard(p.sender_model_path, embedder, GSafeguardSettings(threshold=p.sender_threshold))
        self.senders = sender_model
        if p.quarantine_mean_threshold is not None and not (p.quarantine and self.risk is not None):
            raise ConfigError("quarantine_mean_threshold acts through quarantine on the risk model's scores; add "
                              "--defense-param quarantine=true and --defense-param risk_model_path=PATH")
        if not p.rectifier_llm and self.risk is None:
            raise ConfigError("rectifier_llm=false leaves ARGUS nothing to correct with; give it a risk model "
                              "(--defense-param risk_model_path=PATH, from `misguard bench argus-risk`)")
        self.localizer = Localizer(
            LocalizationWeights(p.alpha, p.beta, p.gamma, p.relevance_threshold, p.delta if self.risk else 0.0), p.top_k
        )
        self.claim_store = claim_store if p.use_claim_store else None
        self.ground_truths = ground_truths if p.ground_truth else ()
        self.goals = GoalSet(embedder, p.goal_dedup_threshold)
        self.prompts: PromptSet = load_prompts("misguard.defenses", "argus")
        self.monitored: dict[int, list[Edge]] = {}
        #: every sender's sentence risks per round, for localization's risk term (`risk_memory="mean"`)
        #: and `quarantine_mean_threshold`
        self.sender_risk = SenderRiskHistory()
        self._watch: set[Edge] = set()
        self._truths_embedded: np.ndarray | None = None
        #: sender -> round in which one of its messages was judged deliberate (`quarantine`)
        self.quarantined: dict[str, int] = {}
        #: sender -> what caught it: "message" (need_review or risk), "sender detector" or "mean risk"
        self.caught_by: dict[str, str] = {}
        #: the last round the sender detector scored
        self._senders_scored = 0

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "params": self.params.model_dump(mode="json"),
            "rectifier": self.rectifier.describe(),
            "embedder": self.embedder.describe(),
            "claim_store": None if self.claim_store is None else str(getattr(self.claim_store, "path", "claim store")),
            "ground_truths": len(self.ground_truths),
            "prompts": self.prompts.ref,
            "risk_model": self.risk.describe() if self.risk is not None else None,
            "sender_model": self.senders.describe() if self.senders is not None else None,
        }

    # -- localization --------------------------------------------------------------------

    async def start_round(self, view: SystemView) -> dict[str, Any]:
        p = self.params
        adaptive = view.round > 1 and p.multi_round and p.dynamic_localization
        mean_quarantine = view.round > 1 and p.quarantine_mean_threshold is not None
        # last round's traffic, embedded once for whichever of the two reads it
        traffic = self.traffic(view, view.round - 1) if adaptive or mean_quarantine else None
        if traffic is not None and self.risk is not None:
            self.sender_risk.record(view.round - 1, traffic)
        if not p.multi_round and view.round > 1:
            loc = Localization(view.round, [], {}, "off (single-round ablation)")
        elif not adaptive or traffic is None:
            loc = self.localizer.first_round(view.graph, view.round)
        else:
            sender_risk = self.sender_risk.mean() if self.risk is not None and p.risk_memory == "mean" else None
            loc = self.localizer.later_round(view.graph, view.round, traffic, self.goals.matrix(), sender_risk)
        self.monitored[view.round] = loc.channels
        self._watch = set(loc.channels)
        report: dict[str, Any] = {"localization": loc.as_dict(), "goals": list(self.goals.texts)}
        if self.senders is not None:
            report["sender_scores"] = self._detect_senders(view, view.round - 1)
        if mean_quarantine:
            report["sender_mean_risk"] = self._quarantine_by_mean(view.round - 1)
        if p.quarantine:
            report["quarantined"] = dict(self.quarantined)
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
        risks = [self.risk.probabilities(v) for v in out] if self.risk is not None else None
        return Traffic([(m["sender"], m["receiver"]) for m in messages], out, risks)

    # -- rectification -------------------------------------------------------------------

    async def intercept(self, message: EdgeMessage, view: SystemView) -> Interception:
        p = self.params
        caught = self.quarantined.get(message.sender)
        # only from the round after: a round's messages are intercepted concurrently, and a
        # decision must not depend on which of them finished first
        if p.quarantine and caught is not None and caught < message.round:
            return _quarantine_block(caught, self.caught_by[message.sender])
        details: dict[str, Any] = {}
        if p.screen_injections:
            # A note to the monitor is data, not an instruction: set aside before anything
            # reads the message, and never delivered (on any channel).
            kept, _, found = screen(message.text)
            if found and kept.strip():
                details["injection_removed"] = [message.text[f.start:f.end][:300] for f in found]
                message = message.model_copy(update={"text": kept.strip()})
        original = message.text if "injection_removed" not in details else None
        monitored = message.edge in self._watch
        details["monitored"] = monitored
        if not monitored and not (p.risk_all_channels and self.risk is not None):
            if original is None:
                return Interception(InterceptorAction.REWRITE, text=message.text, details=details,
                                    reason="note addressed to the channel monitor removed (channel not monitored)")
            return Interception.passed("channel not monitored")
        sentences = split_sentences(message.text) or [message.text]
        scored = self._score(sentences)
        risks = scored[1] if scored is not None else None
        if risks is not None:
            details["risk"] = round(float(risks.max(initial=0.0)), 4)
        if p.prescreen and self._screened_out(message.text, risks, details):
            if original is None:
                return Interception(InterceptorAction.REWRITE, text=message.text, details=details,
                                    reason="note addressed to the channel monitor removed; pre-screen: nothing else")
            return Interception(InterceptorAction.PASS, reason="pre-screen: nothing points at misinformation", details=details)
        metered = MeteredLLM(self.rectifier)
        text, need_review, answer, chat = message.text, False, None, None
        if p.rectifier_llm and monitored:
            chat = self._chat(message)
            try:
                answer = await metered.generate_json(
                    chat, schema=Rectification if p.chain_of_thought else DirectRectification, reasks=1,
                    max_tokens=p.max_tokens,
                )
            except LLMOutputError as exc:
                # Never read as "clean": logged, and the risk path below still applies.
                details["rectifier_unusable"] = str(exc)[:200]
            if answer is not None:
                need_review = answer.need_review
                details.update(need_review=need_review, checks=[c.model_dump() for c in answer.checks])
                revised = answer.revised_message.strip()
                if revised and not _same(revised, message.text):
                    text = revised
        risky = risks is not None and p.risk_goals and float(risks.max(initial=0.0)) >= self._act
        if need_review and answer is not None and chat is not None:
            details["inferred_goal"], details["goal_added"] = await self._infer_goal(metered, chat, answer)
        elif risky and risks is not None:
            goal = sentences[int(risks.argmax())]
            details.update(deliberate_by_risk=True, inferred_goal=goal, goal_source="risk", goal_added=self.goals.add(goal))
        if p.quarantine and (need_review or risky) and message.sender not in self.quarantined:
            self.quarantined[message.sender] = message.round
            self.caught_by[message.sender] = "message"
            details["quarantined"] = message.sender
        if self.risk is not None and p.redact:
            # an unrewritten message is redacted on the scores computed above
            text, redacted = self.redact(text, scored if text is message.text else None)
            if redacted:
                details["redacted"] = redacted
        usage = metered.usage
        if original is None:
            reason = "note addressed to the channel monitor removed" + ("; deliberate misinformation corrected"
                                                                         if need_review or risky else "")
            return Interception(InterceptorAction.REWRITE, text=text, reason=reason, usage=usage, details=details)
        if _same(text, message.text):
            reason = ("rectifier answer unusable; message left unchanged" if "rectifier_unusable" in details
                      else "nothing to correct")
            return Interception(InterceptorAction.PASS, reason=reason, usage=usage, details=details)
        reason = "deliberate misinformation corrected" if need_review or risky else "corrected"
        return Interception(InterceptorAction.REWRITE, text=text, reason=reason, usage=usage, details=details)

    async def review_conclusion(self, messages: Sequence[Mapping[str, Any]], view: SystemView) -> dict[str, Interception]:
        """With `quarantine`: the concluder reads nothing a quarantined sender sent, the
        messages delivered before it was caught included."""
        if not self.params.quarantine:
            return {}
        if self.senders is not None:
            self._detect_senders(view, view.round)
        if self.params.quarantine_mean_threshold is not None:
            self.sender_risk.record(view.round, self.traffic(view, view.round))
            self._quarantine_by_mean(view.round)
        return {m["id"]: _quarantine_block(self.quarantined[m["sender"]], self.caught_by[m["sender"]])
                for m in messages if m["sender"] in self.quarantined}

    def _detect_senders(self, view: SystemView, last_round: int) -> dict[str, dict[str, float]]:
        """Score every agent on each round up to `last_round` not scored yet; quarantine
        those above the detector's threshold (blocked from the round after). Returns
        {round (as the event log's JSON keys it): {agent: probability}}."""
        assert self.senders is not None
        scored: dict[str, dict[str, float]] = {}
        for r in range(self._senders_scored + 1, last_round + 1):
            scores = self.senders.round_scores(view, r)
            for agent, p in scores.items():
                if p > self.senders.params.threshold and agent not in self.quarantined:
                    self.quarantined[agent] = r
                    self.caught_by[agent] = "sender detector"
            scored[str(r)] = {a: round(p, 4) for a, p in scores.items()}
        self._senders_scored = max(self._senders_scored, last_round)
        return scored

    def _quarantine_by_mean(self, last_round: int) -> dict[str, float]:
        """Quarantine every sender whose mean sentence risk over rounds 1..`last_round` is above
        `quarantine_mean_threshold` (blocked from the round after). Returns {sender: mean}."""
        means = self.sender_risk.mean()
        threshold = self.params.quarantine_mean_threshold
        assert threshold is not None
        for sender, mean in means.items():
            if mean > threshold and sender not in self.quarantined:
                self.quarantined[sender] = last_round
                self.caught_by[sender] = "mean risk"
        return {sender: round(mean, 4) for sender, mean in means.items()}

    def _chat(self, message: EdgeMessage) -> list[ChatMessage]:
        evidence = self.evidence(message.text)
        # The message is data between markers; the boundary depends on it, and markers
        # inside it are neutralised, so it cannot close its own block.
        boundary = hashlib.sha256(message.text.encode("utf-8")).hexdigest()[:12]
        data = message.text.replace("<<", "\u2039\u2039").replace(">>", "\u203a\u203a")
        return [
            ChatMessage.system(self.prompts.render("system")),
            ChatMessage.user(
                self.prompts.render(
                    "rectify_cot" if self.params.chain_of_thought else "rectify_direct",
                    sender=message.sender, receiver=message.receiver, message=data, boundary=boundary,
                    goals=self.prompts.render("goals", goals="\n".join(f"- {g}" for g in self.goals.texts)) if self.goals.texts else "",
                    evidence=self.prompts.render("evidence", evidence="\n".join(f"- {e}" for e in evidence)) if evidence else "",
                )
            ),
        ]

    @property
    def _act(self) -> float:
        return self.risk.act_threshold if self.risk is not None else float("inf")

    def _score(self, sentences: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """Vectors and risks of `sentences` (None without a risk model)."""
        if self.risk is None:
            return None
        vectors = self.embedder.embed(sentences, "query")
        return vectors, self.risk.probabilities(vectors)

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

    def redact(self, text: str, scored: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[str, list[dict[str, Any]]]:
        """Remove the sentences of `text` at or above the risk model's act threshold (and,
        with `goal_redact`, those restating an inferred goal); each is replaced by the
        closest unused ground truth when the defense has them, else a note says how many
        were removed. Returns the text and what was done."""
        if self.risk is None:
            return text, []
        spans = sentence_spans(text)
        if not spans:
            return text, []
        sentences = [text[a:b] for a, b in spans]
        vectors, risks = scored if scored is not None else self._score(sentences)  # type: ignore[misc]
        truths = list(self.ground_truths)
        truth_vectors = self._truth_vectors()
        restates = self.restated_goals(vectors, truth_vectors) if self.params.goal_redact else {}
        drop = [i for i in range(len(spans)) if risks[i] >= self.risk.act_threshold or i in restates]
        if not drop:
            return text, []
        used: set[int] = set()
        replacements: dict[tuple[int, int], str] = {}
        done = []
        for i in drop:
            replacement = ""
            if truth_vectors is not None and len(used) < len(truths):
                sims = truth_vectors @ vectors[i]
                sims[list(used)] = -np.inf
                j = int(sims.argmax())
                used.add(j)
                replacement = f"Correction: {truths[j]}"
            replacements[spans[i]] = replacement
            reason = {"goal_cosine": restates[i]} if i in restates and risks[i] < self.risk.act_threshold else {}
            done.append({"sentence": sentences[i][:400], "risk": round(float(risks[i]), 4), **reason,
                         "replaced_by": replacement[:400]})
        new = replace_spans(text, replacements)
        removed = sum(1 for d in done if not d["replaced_by"])
        if removed:
            note = self.prompts.render("redaction_note", count=removed).strip()
            new = f"{new}\n{note}" if new else note
        return new, done

    def _truth_vectors(self) -> np.ndarray | None:
        """The ground truths' vectors, embedded once per run (they do not change)."""
        if not self.ground_truths:
            return None
        if self._truths_embedded is None:
            self._truths_embedded = self.embedder.embed(list(self.ground_truths), "query")
        return self._truths_embedded

    def restated_goals(self, vectors: np.ndarray, truth_vectors: np.ndarray | None) -> dict[int, float]:
        """Sentences (rows of `vectors`) that restate an inferred goal, with their cosine to
        it: at least `goal_dedup_threshold`, and closer to the goal than to any ground truth
        (a correction or a true restatement on the same topic is kept)."""
        goals = self.goals.matrix()
        if goals is None or not len(vectors):
            return {}
        to_goal = (vectors @ goals.T).max(axis=1)
        to_truth = (vectors @ truth_vectors.T).max(axis=1) if truth_vectors is not None else np.full(len(vectors), -np.inf)
        hits = (to_goal >= self.params.goal_dedup_threshold) & (to_goal > to_truth)
        return {int(i): round(float(to_goal[i]), 4) for i in np.flatnonzero(hits)}

    async def _infer_goal(self, metered: MeteredLLM, chat: list[ChatMessage], answer: Rectification | DirectRectification) -> tuple[str | None, bool]:
        follow_up = [
            *chat,
            ChatMessage.assistant(answer.model_dump_json(include={"revised_message", "need_review"})),
            ChatMessage.user(self.prompts.render("infer_goal")),
        ]
        try:
            inferred: InferredGoal = await metered.generate_json(follow_up, schema=InferredGoal, reasks=1, max_tokens=80)
        except LLMOutputError:
            return None, False
        if inferred.goal is None:
            return None, False
        return inferred.goal, self.goals.add(inferred.goal)

    def prescreen_score(self, text: str) -> float | None:
        """Best sentence cosine to the inferred goals and the store's false claims; None
        when there is nothing to compare with (then the LLM always runs)."""
        sentences = split_sentences(text) or [text]
        references = []
        goals = self.goals.matrix()
        if goals is not None:
            references.append(goals)
        vectors = self.embedder.embed(sentences, "query")
        best: float | None = float(np.max(vectors @ np.vstack(references).T)) if references else None
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
    return [
        ArgusDefense(
            context.llm("rectifier"), context.need_embedder("argus"), params,
            claim_store=context.claim_store, ground_truths=context.ground_truths,
        )
    ]

