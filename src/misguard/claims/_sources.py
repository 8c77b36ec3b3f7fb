"""The sources a claim decision is fitted on, read by path from a data directory.

Layout under the directory (each source optional; `load_training_data` uses what is there):

    claims/devset-multilingual/   claims_db.jsonl, true_claims.jsonl, queries.jsonl
    claims/checkthat2020/         verified_claims.docs.tsv, {train,dev,test}/tweets.queries.tsv
                                  and {train,dev,test}/tweet-vclaim-pairs.qrels
    claims/liar/                  {train,valid,test}.tsv (LIAR, 14 columns)
    claims/snopes-cs598gw/        snopes_claims.jsonl

The dev set gives multilingual attack queries (false ones and near-miss true ones) on its
40 false claims; LIAR and Snopes give false claims to store (distractors, and the positives
of the paper-style attacks) and held-out true claims (the negatives); CheckThat-2020 gives
tweets paired with the fact-checked claim each repeats.
"""

from __future__ import annotations

import csv
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataError
from ..types import Claim
from ._ingest import read_claims
from ._redteam import mcq_template, wrap

DEVSET = Path("claims/devset-multilingual")
CHECKTHAT = Path("claims/checkthat2020")
CHECKTHAT_SPLITS = ("train", "dev", "test")
LIAR = Path("claims/liar")
SNOPES = Path("claims/snopes-cs598gw/snopes_claims.jsonl")
_LIAR_FALSE = {"pants-fire", "false", "barely-true"}
_SNOPES_FALSE = {"false", "mostly-false"}
_LIAR_TRUE = {"true", "mostly-true"}
_SNOPES_TRUE = {"true", "mostly-true"}
#: Words of filler around the claim in the offline summarize attack (the paper: ~500).
LONG_TEXT_WORDS = 450


# -- the multilingual dev set ---------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    qid: str
    claim_id: str
    label: str  # "false" or "true"
    attack: str
    lang: str
    text: str
    group: str  # the false claim this query belongs with (for cross-validation by claim)
    topic: str
    negative_type: str | None


@dataclass(frozen=True)
class DevSet:
    claims: list[Claim]
    queries: list[Query]


def _jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        raise DataError("missing dev-set file", source=str(path))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_devset(data_dir: Path) -> DevSet:
    root = data_dir / DEVSET
    claims = [
        Claim(id=r["id"], text=r["text"], verdict="false", verdict_original=r["verdict"], language=r["lang"],
              topic=r["topic"], publisher="devset-multilingual")
        for r in _jsonl(root / "claims_db.jsonl")
    ]
    topics = {c.id: c.topic or "" for c in claims}
    trues = {r["id"]: r for r in _jsonl(root / "true_claims.jsonl")}
    queries = []
    for r in _jsonl(root / "queries.jsonl"):
        true = trues.get(r["claim_id"])
        group = true["near"] if true else r["claim_id"]
        queries.append(
            Query(
                qid=r["qid"], claim_id=r["claim_id"], label=r["label"], attack=r["attack"], lang=r["lang"],
                text=r["text"], group=group, topic=true["topic"] if true else topics[r["claim_id"]],
                negative_type=true.get("negative_type") if true else None,
            )
        )
    return DevSet(claims, queries)


# -- LIAR and Snopes ------------------------------------------------------------------------


def load_distractors(data_dir: Path, limit: int) -> list[Claim]:
    """False-like LIAR and Snopes claims, in file order (LIAR train/valid/test, then Snopes)."""
    out: list[Claim] = []
    liar = data_dir / LIAR
    # The paper's lists: PolitiFact False / Pants on Fire (+ Barely True = Mostly False, as
    # LIAR's SOURCE.md maps it) and Snopes False / Mostly False.
    for split in ("train", "valid", "test"):
        out += [c for c in read_claims(liar / f"{split}.tsv", "liar") if c.verdict_original in _LIAR_FALSE]
    snopes = data_dir / SNOPES
    out += [c for c in read_claims(snopes, "snopes") if c.verdict_original in _SNOPES_FALSE]
    return out if limit < 0 else out[:limit]


def load_true_claims(data_dir: Path) -> list[Claim]:
    """Held-out true-rated claims (never put in the store)."""
    liar = data_dir / LIAR
    out: list[Claim] = []
    for split in ("train", "valid", "test"):
        out += [c for c in read_claims(liar / f"{split}.tsv", "liar") if c.verdict_original in _LIAR_TRUE]
    snopes = data_dir / SNOPES
    out += [c for c in read_claims(snopes, "snopes") if c.verdict_original in _SNOPES_TRUE]
    return out


@dataclass(frozen=True)
class PaperQuery:
    key: str
    claim_id: str
    label: str  # "false" (a stored claim) or "true" (held out)
    attack: str
    lang: str
    text: str
    claim_text: str


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text[-1:] in ".!?" else text + "."


def paper_queries(false_pool: Sequence[Claim], true_pool: Sequence[Claim], n: int, seed: int) -> list[PaperQuery]:
    """The paper's offline attacks: n false and n true claims, each as a direct question, an
    MCQ option next to three other true statements (`mcq_template`), and buried at a random
    place in a ~450-word text of other true statements (seeded)."""
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


# -- CheckThat! 2020 task 2 (tweets vs Snopes verified claims) ------------------------------


@dataclass(frozen=True)
class TweetQuery:
    """A tweet and the verified claim ids it repeats (the qrels; more than one id is a
    declared duplicate group: any of them is the right claim)."""

    qid: str
    text: str
    gold: frozenset[str]
    split: str


@dataclass(frozen=True)
class CheckThat:
    claims: list[Claim]
    queries: dict[str, list[TweetQuery]]  # by split


def _tsv_rows(path: Path) -> list[list[str]]:
    if not path.is_file():
        raise DataError("missing CheckThat-2020 file", source=str(path))
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    return rows


def load_checkthat(data_dir: Path, limit: int = 0) -> CheckThat:
    """The verified claims (their `vclaim` sentence) and the tweets of every split with
    their qrels.

    The task's claims carry no rating; every one was fact-checked by Snopes and the task
    treats a tweet repeating one as a hit, so they are stored as false-like
    (`verdict_original="fact-checked (CheckThat-2020, rating not given)"`) for the
    "flagged" measure. Claim ids are prefixed `ct-`. `limit` > 0 (tests) keeps the first
    `limit` tweets of each split, and of the claims only theirs plus the first 1,000.
    """
    root = data_dir / CHECKTHAT
    claims = []
    for row in _tsv_rows(root / "verified_claims.docs.tsv")[1:]:
        if len(row) < 2 or not row[1].strip():
            continue
        claims.append(Claim(id=f"ct-{row[0]}", text=" ".join(row[1].split()), verdict="false",
                            verdict_original="fact-checked (CheckThat-2020, rating not given)",
                            publisher="snopes (CheckThat-2020)"))
    queries: dict[str, list[TweetQuery]] = {}
    for split in CHECKTHAT_SPLITS:
        gold: dict[str, set[str]] = {}
        for row in _tsv_rows(root / split / "tweet-vclaim-pairs.qrels"):
            if len(row) >= 4 and row[3].strip() == "1":
                gold.setdefault(row[0].strip(), set()).add(f"ct-{row[2].strip()}")
        queries[split] = [
            TweetQuery(qid=f"{split}-{row[0]}", text=row[1], gold=frozenset(gold[row[0]]), split=split)
            for row in _tsv_rows(root / split / "tweets.queries.tsv")[1:]
            if len(row) >= 2 and row[0] in gold
        ][: limit or None]
    if limit > 0:
        keep = {cid for qs in queries.values() for q in qs for cid in q.gold}
        claims = [c for i, c in enumerate(claims) if i < 1000 or c.id in keep]
    return CheckThat(claims, queries)


def claim_key(text: str) -> str:
    """A claim's text with case, quotes and punctuation ignored: the CheckThat-2020 claims
    hold 184 groups of such copies (369 claims: ""x"" next to 'x'), which the qrels never
    name together."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


# -- everything at once ---------------------------------------------------------------------


@dataclass
class TrainingData:
    """The sources found in one data directory (absent ones are None or empty)."""

    root: Path
    devset: DevSet | None = None
    checkthat: CheckThat | None = None
    #: false-like LIAR and Snopes claims: stored next to the dev claims, and the positives
    #: of the paper-style attacks
    distractors: list[Claim] = field(default_factory=list)
    #: true-rated LIAR and Snopes claims, never stored: the paper-style negatives
    true_claims: list[Claim] = field(default_factory=list)

    def describe(self) -> dict[str, object]:
        return {
            "data": str(self.root),
            "devset_queries": len(self.devset.queries) if self.devset else 0,
            "checkthat_tweets": {s: len(q) for s, q in self.checkthat.queries.items()} if self.checkthat else None,
            "distractors": len(self.distractors),
            "true_claims": len(self.true_claims),
        }


def load_training_data(data_dir: str | Path, *, distractors: int = -1, checkthat_limit: int = 0,
                       checkthat_train: int = 0) -> TrainingData:
    """Every source present under `data_dir` (layout in the module docstring).

    `distractors`: LIAR/Snopes false claims kept (-1: all); `checkthat_limit` > 0 keeps that
    many tweets per CheckThat split (tests); `checkthat_train` > 0 keeps that many train
    tweets. A directory holding none of the sources is an error naming the layout."""
    root = Path(data_dir)
    if not root.is_dir():
        raise DataError("no such data directory", source=str(root))
    data = TrainingData(root)
    if (root / DEVSET).is_dir():
        data.devset = load_devset(root)
    if (root / CHECKTHAT).is_dir():
        data.checkthat = load_checkthat(root, checkthat_limit)
        if checkthat_train > 0:
            data.checkthat.queries["train"] = data.checkthat.queries["train"][:checkthat_train]
    if (root / LIAR).is_dir() and (root / SNOPES).is_file():
        data.distractors = load_distractors(root, distractors)
        data.true_claims = load_true_claims(root)
    if data.devset is None and data.checkthat is None and not data.distractors:
        raise DataError(f"holds none of {DEVSET}/, {CHECKTHAT}/, {LIAR}/ with {SNOPES}; see the layout in "
                        "docs/claims.md (\"Fitting a decision\")", source=str(root))
    return data


__all__ = [
    "CHECKTHAT", "DEVSET", "CheckThat", "DevSet", "PaperQuery", "Query", "TrainingData", "TweetQuery", "claim_key",
    "load_checkthat", "load_devset", "load_distractors", "load_training_data", "load_true_claims", "paper_queries",
]
