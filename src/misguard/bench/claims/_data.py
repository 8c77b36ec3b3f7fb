"""Loading the claim-guard benchmark data from ../shared/data/claims (never copied)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ...claims import read_claims
from ...config import Settings
from ...errors import DataError
from ...types import Claim

DEVSET = Path("claims/devset-multilingual")
_LIAR_FALSE = {"pants-fire", "false", "barely-true"}
_SNOPES_FALSE = {"false", "mostly-false"}


def resolve_data_dir(settings: Settings, data: Path | None) -> Path:
    """--data, else settings.data_dir, else ../shared/data (relative to the working directory)."""
    for candidate in (data, settings.data_dir, Path("../shared/data")):
        if candidate is not None and (Path(candidate) / DEVSET).is_dir():
            return Path(candidate)
    raise DataError(
        "cannot find claims/devset-multilingual; pass --data DIR (the shared data directory) "
        "or set data_dir in misguard.toml"
    )


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


def load_distractors(data_dir: Path, limit: int) -> list[Claim]:
    """False-like LIAR and Snopes claims, in file order (LIAR train/valid/test, then Snopes)."""
    out: list[Claim] = []
    liar = data_dir / "claims" / "liar"
    # The paper's lists: PolitiFact False / Pants on Fire (+ Barely True = Mostly False, as
    # LIAR's SOURCE.md maps it) and Snopes False / Mostly False.
    for split in ("train", "valid", "test"):
        out += [c for c in read_claims(liar / f"{split}.tsv", "liar") if c.verdict_original in _LIAR_FALSE]
    snopes = data_dir / "claims" / "snopes-cs598gw" / "snopes_claims.jsonl"
    out += [c for c in read_claims(snopes, "snopes") if c.verdict_original in _SNOPES_FALSE]
    return out if limit < 0 else out[:limit]


# -- CheckThat! 2020 task 2 (tweets vs Snopes verified claims) ------------------------------

CHECKTHAT = Path("claims/checkthat2020")
CHECKTHAT_SPLITS = ("train", "dev", "test")


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
    import csv

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
