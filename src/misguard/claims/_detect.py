"""Detection agent: features of (text, nearest stored claim), an offline decision over
them, and the paper's LLM judge.

The offline decision is a logistic regression over a handful of retrieval and lexical
features, fitted by `fit_decision` (`misguard claims fit-decision`) on held-in data
(cross-validated by claim) and shipped as a small JSON file per embedder. `ThresholdDecision` is the naive baseline (and
the fallback for embedders without a fitted model).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Protocol

import numpy as np
from pydantic import BaseModel

from ..errors import ConfigError, LLMOutputError
from ..llm import LLM
from ..prompts import load_prompts
from ..types import ChatMessage
from ._rank import LinearRanker
from ._reader import READ_LANGUAGE, probability
from ._shift import LanguageShift
from ._text import capitalised, content_words, numbers

#: The decision sees only what does not depend on the store's size or density, so a model
#: calibrated on the 11k-claim benchmark store transfers to a store of 30 claims or 1M:
#: margins to the runner-up and hubness over the store change with how many neighbours a
#: store has (they rank candidates but do not decide). How specific the match is, is
#: measured against a fixed reference instead: the average fact-checked headline, i.e. the
#: language shift's target.
FEATURES: tuple[str, ...] = (
    "s1",  # best segment cosine to the matched claim
    "body",  # cosine of the whole text (instructions stripped) to the matched claim
    "support",  # second-best segment cosine to the matched claim (s1 when one segment)
    "votes",  # share of segments whose own nearest candidate is the matched claim
    "query_specific",  # s1 minus the best segment's cosine to the average headline
    "claim_specific",  # s1 minus the claim's cosine to the average headline
    "lexical",  # share of the claim's content words found in the text (Latin script only)
    "number_clash",  # both state numbers and none is shared
    "number_hit",  # a number of the claim appears in the text
    "names",  # share of the claim's capitalised words found in the text (Latin only)
    "option",  # the best segment is a multiple-choice option
    # Languages sit at different cosine levels to English claims in e5, even after the
    # language shift: one offset and one slope on s1 per language group (the language is
    # guessed from the text).
    *(f"lang_{g}" for g in ("en", "fr", "es", "ar", "hi", "zh", "other")),
    *(f"s1_{g}" for g in ("en", "fr", "es", "ar", "hi", "zh", "other")),
    # Social-media text (the normalisation of `_social` changed it: links, handles, hashtags,
    # an attribution tail, emoji) sits lower on cosine to a fact-check headline than the same
    # claim written plainly: one offset and one slope on s1 for it, like a language group.
    "social",
    "s1_social",
    # The pair reader's value for the text and its matched claim (`_reader`: a second
    # embedder's cosine); 0 without a reader, and for texts not in English: the bundled
    # readers read English only.
    "reader_en",
    # The same for a reader of every language (a multilingual embedder, `--reader-languages
    # all`), for texts in any language. A decision reads one of the two.
    "reader_any",
)
#: The features of decisions fitted without a pair reader (their files name these).
FEATURES_NO_READER: tuple[str, ...] = FEATURES[:-2]
#: ... with an English reader, and with a reader of every language.
FEATURES_EN_READER: tuple[str, ...] = (*FEATURES_NO_READER, "reader_en")
FEATURES_ANY_READER: tuple[str, ...] = (*FEATURES_NO_READER, "reader_any")
#: The features of decisions fitted before "social" existed (their files name these).
FEATURES_PLAIN: tuple[str, ...] = FEATURES_NO_READER[:-2]
SCRIPTS = ("latin", "arabic", "devanagari", "cjk", "other")
LANGUAGE_GROUPS = ("en", "fr", "es", "ar", "hi", "zh", "other")


@dataclass(frozen=True)
class MatchContext:
    """What the detection agent knows about one text and its best candidate claim."""

    s1: float
    body: float
    support: float
    votes: float
    text: str
    claim_text: str
    segment_kind: str
    script: str
    language: str = "other"
    #: cosines of the best segment and of the claim to the average headline (0 without a
    #: language shift, which holds that reference)
    query_generic: float = 0.0
    claim_generic: float = 0.0
    #: the social-media normalisation changed the text
    social: bool = False
    #: the pair reader's value for the pair, a cosine (None: no reader)
    reader: float | None = None


def features(ctx: MatchContext) -> np.ndarray:
    """The feature vector (order of `FEATURES`)."""
    latin = 1.0 if ctx.script == "latin" else 0.0
    claim_words = content_words(ctx.claim_text)
    lexical = len(claim_words & content_words(ctx.text)) / max(1, len(claim_words))
    claim_numbers, text_numbers = numbers(ctx.claim_text), numbers(ctx.text)
    clash = 1.0 if claim_numbers and text_numbers and not claim_numbers & text_numbers else 0.0
    hit = 1.0 if claim_numbers & text_numbers else 0.0
    claim_names = capitalised(ctx.claim_text)
    names = len(claim_names & capitalised(ctx.text)) / max(1, len(claim_names))
    group = ctx.language if ctx.language in LANGUAGE_GROUPS else "other"
    onehot = [1.0 if group == g else 0.0 for g in LANGUAGE_GROUPS]
    social = 1.0 if ctx.social else 0.0
    reader = ctx.reader if ctx.reader is not None and group == READ_LANGUAGE else 0.0
    # the guard sets `reader` for every language only when its reader reads them all
    any_reader = ctx.reader if ctx.reader is not None else 0.0
    return np.array(
        [
            ctx.s1, ctx.body, ctx.support, ctx.votes, ctx.s1 - ctx.query_generic, ctx.s1 - ctx.claim_generic, lexical * latin, clash, hit, names * latin,
            1.0 if ctx.segment_kind == "option" else 0.0, *onehot, *(ctx.s1 * o for o in onehot), social, ctx.s1 * social,
            reader, any_reader,
        ],
        dtype=np.float64,
    )


def script_of(text: str) -> str:
    """The dominant script of a text: latin, arabic, devanagari, cjk or other."""
    counts = dict.fromkeys(SCRIPTS, 0)
    for ch in text[:2000]:
        if not ch.isalpha():
            continue
        if ch < "\u0250":
            counts["latin"] += 1
        elif "\u0600" <= ch <= "\u06ff":
            counts["arabic"] += 1
        elif "\u0900" <= ch <= "\u097f":
            counts["devanagari"] += 1
        elif "\u3040" <= ch <= "\u30ff" or "\u4e00" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af":
            counts["cjk"] += 1
        else:
            counts["other"] += 1
    best = max(counts.items(), key=lambda kv: kv[1])
    return best[0] if best[1] else "latin"


class Decision(Protocol):
    name: str
    #: applied to query vectors before retrieval; the features were fitted after it
    shift: LanguageShift | None

    def score(self, x: np.ndarray) -> float: ...

    @property
    def threshold(self) -> float: ...

    def describe(self) -> dict[str, object]: ...


@dataclass
class ThresholdDecision:
    """Flag when the best cosine reaches a threshold (the naive baseline)."""

    cutoff: float
    name: str = "threshold"
    shift: LanguageShift | None = None
    ranker: LinearRanker | None = None

    def score(self, x: np.ndarray) -> float:
        return float(x[0])

    @property
    def threshold(self) -> float:
        return self.cutoff

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "threshold": self.cutoff}


@dataclass
class LogisticDecision:
    """A standardised logistic regression over `names` (a subset of `FEATURES`, in that
    order); score is P(known false claim). `score` takes the full `features` vector."""

    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    cutoff: float = 0.5
    embedder: str = ""
    trained_on: str = ""
    name: str = "logistic"
    shift: LanguageShift | None = None
    #: the learned candidate ranker fitted with it (None: the guard fuses dense and BM25)
    ranker: LinearRanker | None = None
    #: the features it reads (decisions fitted before "social" read `FEATURES_PLAIN`,
    #: without a pair reader `FEATURES_NO_READER`, with one `FEATURES_EN_READER` or
    #: `FEATURES_ANY_READER`)
    names: tuple[str, ...] = FEATURES_NO_READER
    #: the reader it was fitted with (its `identity()`); None for files written before
    #: readers were recorded (the guard then refuses to run them without a reader)
    reader: dict | None = None

    def __post_init__(self) -> None:
        unknown = [n for n in self.names if n not in FEATURES]
        if unknown or len(self.coef) != len(self.names):
            raise ConfigError(f"decision features {unknown or len(self.coef)} do not fit {len(self.names)} named ones")
        self._columns = np.array([FEATURES.index(n) for n in self.names])

    def score(self, x: np.ndarray) -> float:
        x = np.asarray(x, dtype=np.float64)[self._columns]
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return probability(float(z @ np.asarray(self.coef) + self.intercept))

    @property
    def threshold(self) -> float:
        return self.cutoff

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "embedder": self.embedder, "threshold": self.cutoff, "trained_on": self.trained_on,
                "language_shift": sorted(self.shift.to_dict()["centroids"]) if self.shift else None,  # type: ignore[call-overload]
                "ranker": self.ranker.trained_on if self.ranker else None, "reader": self.reader}

    def to_json(self) -> str:
        return json.dumps(
            {
                "features": list(self.names), "mean": self.mean, "scale": self.scale, "coef": self.coef,
                "intercept": self.intercept, "threshold": self.cutoff, "embedder": self.embedder,
                "trained_on": self.trained_on, "language_shift": self.shift.to_dict() if self.shift else None,
                "ranker": self.ranker.to_dict() if self.ranker else None, "reader": self.reader,
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str, source: str = "decision model") -> LogisticDecision:
        try:
            data = json.loads(text)
            names = tuple(data["features"])
            if names not in (FEATURES_EN_READER, FEATURES_ANY_READER, FEATURES_NO_READER, FEATURES_PLAIN):
                raise ConfigError(f"{source} was fitted on other features; refit it with misguard claims fit-decision")
            return cls(
                mean=list(map(float, data["mean"])), scale=list(map(float, data["scale"])),
                coef=list(map(float, data["coef"])), intercept=float(data["intercept"]),
                cutoff=float(data["threshold"]), embedder=str(data["embedder"]),
                trained_on=str(data.get("trained_on", "")),
                shift=LanguageShift.from_dict(data["language_shift"]) if data.get("language_shift") else None,
                ranker=LinearRanker.from_dict(data["ranker"]) if data.get("ranker") else None, names=names,
                reader=data.get("reader"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{source} is not a decision model: {exc}") from None


def fit_logistic(
    x: np.ndarray, y: np.ndarray, *, embedder: str, trained_on: str, c: float = 0.1, shift: LanguageShift | None = None,
    ranker: LinearRanker | None = None, sample_weight: np.ndarray | None = None, names: tuple[str, ...] = FEATURES_NO_READER,
    reader: dict | None = None,
) -> LogisticDecision:
    """Fit the offline decision on features computed after `shift` (needs the `claims`
    extra for scikit-learn). `x` holds every one of `FEATURES`; the model reads `names`."""
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        from ..errors import MissingExtraError

        raise MissingExtraError("scikit-learn", "claims", "fitting the offline decision") from None
    x = np.asarray(x, dtype=np.float64)[:, [FEATURES.index(n) for n in names]]
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, max_iter=5000, class_weight="balanced")
    model.fit((x - mean) / scale, y, sample_weight=sample_weight)
    return LogisticDecision(
        mean=mean.tolist(), scale=scale.tolist(), coef=model.coef_[0].tolist(),
        intercept=float(model.intercept_[0]), embedder=embedder, trained_on=trained_on, shift=shift, ranker=ranker,
        names=tuple(names), reader=reader,
    )


def default_decision(embedder_spec: str, reader_spec: str | None = None) -> Decision:
    """The shipped decision model for this embedder (and embedding reader), if one exists."""
    specs = [embedder_spec] + ([reader_spec] if reader_spec else [])
    name = "decision-" + "-with-".join(re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-") for s in specs) + ".json"
    try:
        text = resources.files("misguard.claims").joinpath("data", name).read_text(encoding="utf-8")
    except FileNotFoundError:
        reading = f" with reader {reader_spec!r}" if reader_spec else ""
        raise ConfigError(
            f"No fitted decision model for embedder {embedder_spec!r}{reading}; fit one with "
            "`misguard claims fit-decision --data DIR --output FILE` and pass it with --decision FILE"
        ) from None
    return LogisticDecision.from_json(text, name)


def load_decision(path: str | Path) -> Decision:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"Decision model {path} does not exist")
    return LogisticDecision.from_json(path.read_text(encoding="utf-8"), str(path))


class JudgeAnswer(BaseModel):
    """The hardened judge's answer (prompt 3), decoded under this schema."""

    discusses_false_headline: bool


class LLMJudge:
    """The paper's RAG judge: query + retrieved false headlines -> 'Yes' / 'No'.

    `prompt` is 1 or 2 (the paper's two system prompts), or 3: the judge hardened against
    prompt injection (the query delimited as data between markers with a boundary drawn
    from it, the answer a JSON object under a schema; `judge_3` of the prompts). An answer
    that is neither Yes nor No (or unparseable JSON) raises `LLMOutputError`; a failure is
    never read as "no misinformation".
    """

    def __init__(self, llm: LLM, *, prompt: int = 2) -> None:
        if prompt not in (1, 2, 3):
            raise ConfigError("The LLM judge prompt is 1, 2 (the paper's) or 3 (hardened against injection)")
        self.llm = llm
        self.prompt = prompt
        self.prompts = load_prompts("misguard.claims", "safer_web")
        self.name = f"llm-judge-{prompt}"

    def messages(self, query: str, headlines: list[str]) -> list[ChatMessage]:
        listed = "\n".join(f"- {h}" for h in headlines)
        if self.prompt == 3:
            # The boundary depends on the query, so a query cannot close the markers by
            # quoting them; markers inside the query are neutralised all the same.
            boundary = hashlib.sha256(query.encode("utf-8")).hexdigest()[:12]
            data = query.replace("<<", "\u2039\u2039").replace(">>", "\u203a\u203a")
            return [
                ChatMessage.system(self.prompts.render("judge_3", boundary=boundary)),
                ChatMessage.user(self.prompts.render("judge_3_user", query=data, headlines=listed, boundary=boundary)),
            ]
        return [
            ChatMessage.system(self.prompts.render(f"judge_{self.prompt}")),
            ChatMessage.user(self.prompts.render("judge_user", query=query, headlines=listed)),
        ]

    async def judge_async(self, query: str, headlines: list[str]) -> bool:
        """`judge` for code that runs in an event loop."""
        if self.prompt == 3:
            answer = await self.llm.generate_json(self.messages(query, headlines), schema=JudgeAnswer, reasks=1,
                                                   max_tokens=24)
            return answer.discusses_false_headline
        out = await self.llm.generate(self.messages(query, headlines), max_tokens=4)
        return parse_yes_no(out.text)

    def judge(self, query: str, headlines: list[str]) -> bool:
        """Blocking judge call. Inside a running event loop (a web handler, a notebook) the
        call runs on a worker thread with its own loop, since `generate_sync` cannot nest."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.judge_async(query, headlines))
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="llm-judge") as pool:
            return pool.submit(asyncio.run, self.judge_async(query, headlines)).result()

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "llm": self.llm.describe(), "prompts": self.prompts.ref}


def parse_yes_no(text: str) -> bool:
    word = re.sub(r"[^a-z]+", " ", text.lower()).strip().split(" ")[0] if text.strip() else ""
    if word == "yes":
        return True
    if word == "no":
        return False
    raise LLMOutputError("The judge answered neither Yes nor No", text=text)
