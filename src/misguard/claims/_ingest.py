"""Readers and writers for claim files: JSONL, CSV, schema.org ClaimReview JSON-LD, and
adapters for LIAR (TSV) and the Snopes scrape (JSONL).

Every reader parses the whole file before returning, raising `DataError` with the file and
line (or item number) of the first bad row, so an ingest is all or nothing. What a reader
does not use is reported, never dropped in silence (`read_claim_file`): fields of JSONL and
CSV rows it does not read, and ratings it does not know (stored as `other`, which never
flags a text); `strict=True` refuses such a file instead.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import DataError
from ..types import Claim, VerdictLabel
from ._text import clean_text
from ._verdicts import known_verdict

FORMATS = ("jsonl", "csv", "claimreview", "liar", "snopes")
_MAX_FILE_BYTES = 2 * 1024**3
_LIAR_COLUMNS = 14


def detect_format(path: Path) -> str:
    """Guess a file's format from its name and, for JSONL, its first row."""
    name = path.name.lower()
    if name.endswith(".tsv"):
        return "liar"
    if name.endswith(".csv"):
        return "csv"
    if name.endswith((".json", ".jsonld", ".json-ld")):
        return "claimreview"
    if name.endswith((".jsonl", ".ndjson")):
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.strip():
                    try:
                        first = json.loads(line)
                    except json.JSONDecodeError:
                        return "jsonl"  # the reader reports the bad line
                    if isinstance(first, dict) and {"rating", "statement", "url"} <= first.keys():
                        return "snopes"
                    return "jsonl"
        return "jsonl"
    raise DataError(
        f"cannot tell the format of {path.name}; pass --format one of {', '.join(FORMATS)}",
        source=str(path),
    )


#: The fields a JSONL or CSV row may carry (`_ALIASES` names the other spellings read).
FIELDS = ("id", "text", "verdict", "verdict_original", "language", "topic", "url", "publisher", "date")


@dataclass
class ClaimFile:
    """The claims of one file, and what of it was not used as given."""

    path: Path
    format: str
    claims: list[Claim]
    #: JSONL/CSV fields that are not read -> the number of rows that carry one
    unknown_fields: Counter[str] = field(default_factory=Counter)
    #: ratings no rule knows (stored as `other`) -> the number of rows with each
    unknown_verdicts: Counter[str] = field(default_factory=Counter)

    def warnings(self) -> list[str]:
        """One line per thing not used as given (empty when everything was)."""
        out = []
        if self.unknown_fields:
            listed = ", ".join(f"{name!r} ({n} rows)" for name, n in self.unknown_fields.most_common())
            out.append(f"{self.path}: fields not read, dropped: {listed}; the fields read: {', '.join(FIELDS)} "
                       f"(see `misguard claims add --help`)")
        if self.unknown_verdicts:
            listed = ", ".join(f"{name!r} ({n} rows)" for name, n in self.unknown_verdicts.most_common())
            out.append(f"{self.path}: ratings not known, stored as 'other' (never flagged): {listed}; use a rating "
                       f"such as false, mostly false, mixed, mostly true, true or unproven")
        return out


def sample_claims_path() -> Path:
    """The 32 sample claims that ship with misguard (myths rated false, and some true
    facts): `misguard claims add --db DIR --sample`."""
    from importlib import resources

    return Path(str(resources.files("misguard.claims").joinpath("data", "sample_claims.jsonl")))


def read_claims(path: str | Path, fmt: str | None = None) -> list[Claim]:
    """Read every claim of a file (all or nothing)."""
    return read_claim_file(path, fmt).claims


def read_claim_file(path: str | Path, fmt: str | None = None, *, strict: bool = False) -> ClaimFile:
    """Read every claim of a file (all or nothing), with what was not used as given (fields
    not read, ratings not known). `strict`: such a file is a `DataError` instead."""
    path = Path(path)
    if not path.is_file():
        raise DataError("no such file", source=str(path))
    if path.stat().st_size > _MAX_FILE_BYTES:
        raise DataError("file larger than 2 GiB; split it", source=str(path))
    fmt = fmt or detect_format(path)
    readers = {
        "jsonl": _read_jsonl, "csv": _read_csv, "claimreview": _read_claimreview,
        "liar": _read_liar, "snopes": _read_snopes,
    }
    if fmt not in readers:
        raise DataError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}", source=str(path))
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataError("not UTF-8 text (binary file?)", source=str(path), line=line) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise DataError("NUL byte: this looks like a binary file", source=str(path), line=line)
    result = ClaimFile(path, fmt, [])
    result.claims = readers[fmt](text, str(path), result)
    if strict and (result.unknown_fields or result.unknown_verdicts):
        raise DataError("refused (--strict): " + " ".join(w.split(": ", 1)[1] for w in result.warnings()), source=str(path))
    return result


def _make_claim(data: dict[str, Any], source: str, line: int | None, notes: ClaimFile) -> Claim:
    text = data.get("text")
    if not isinstance(text, str) or not clean_text(text).strip():
        raise DataError("row has no claim text ('text')", source=source, line=line)
    original = data.get("verdict_original")
    verdict = data.get("verdict")
    if verdict is None or (isinstance(verdict, str) and not verdict.strip()):
        raise DataError("row has no verdict ('verdict' or 'rating')", source=source, line=line)
    if original is None:
        original = str(verdict)
    try:
        label = VerdictLabel(verdict) if verdict in VerdictLabel._value2member_map_ else known_verdict(str(verdict))
        if label is None:
            notes.unknown_verdicts[str(verdict).strip()] += 1
            label = VerdictLabel.OTHER
        claim_id = data.get("id") or stable_id(clean_text(text).strip())
        return Claim(
            id=str(claim_id),
            text=clean_text(text).strip(),
            verdict=label,
            verdict_original=str(original),
            language=str(data.get("language") or "en"),
            topic=data.get("topic") or None,
            url=data.get("url") or None,
            publisher=data.get("publisher") or None,
            date=str(data["date"]) if data.get("date") else None,
        )
    except ValidationError as exc:
        problem = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise DataError(f"invalid claim: {problem}", source=source, line=line) from None


def stable_id(text: str) -> str:
    """An id derived from the text, for rows that carry none."""
    return "h:" + hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


_ALIASES = {
    "text": ("text", "claim", "claimReviewed", "statement"),
    "verdict": ("verdict", "rating", "label"),
    "language": ("language", "lang", "inLanguage"),
}


_READ = frozenset(FIELDS) | {name for names in _ALIASES.values() for name in names}


def _normalise_row(row: dict[str, Any], notes: ClaimFile) -> dict[str, Any]:
    for name, value in row.items():
        if name not in _READ and value not in (None, ""):
            notes.unknown_fields[str(name)] += 1
    out = dict(row)
    for wanted, names in _ALIASES.items():
        if out.get(wanted) in (None, ""):
            for name in names:
                if row.get(name) not in (None, ""):
                    out[wanted] = row[name]
                    break
    return out


def _json_rows(text: str, source: str) -> Iterable[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-empty line; a bad line is a DataError."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"not JSON: {exc.msg}", source=source, line=number) from None
        if not isinstance(row, dict):
            raise DataError("each line must be a JSON object", source=source, line=number)
        yield number, row


def _read_jsonl(text: str, source: str, notes: ClaimFile) -> list[Claim]:
    return [_make_claim(_normalise_row(row, notes), source, number, notes) for number, row in _json_rows(text, source)]


def _read_csv(text: str, source: str, notes: ClaimFile) -> list[Claim]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if not reader.fieldnames or not {"text", "claim", "claimReviewed", "statement"} & set(reader.fieldnames):
        raise DataError("CSV needs a header with a 'text' column", source=source, line=1)
    claims = []
    try:
        for row in reader:
            if None in row:
                raise DataError("more fields than the header has", source=source, line=reader.line_num)
            claims.append(_make_claim(_normalise_row(row, notes), source, reader.line_num, notes))
    except csv.Error as exc:
        raise DataError(f"bad CSV: {exc}", source=source, line=reader.line_num) from None
    return claims


def _read_liar(text: str, source: str, notes: ClaimFile) -> list[Claim]:
    """LIAR TSV: 14 columns, no header; quotes are literal (csv.QUOTE_NONE)."""
    claims = []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    for row in reader:
        number = reader.line_num
        if not row or not any(field.strip() for field in row):
            continue
        if len(row) != _LIAR_COLUMNS:
            raise DataError(f"LIAR rows have {_LIAR_COLUMNS} tab-separated fields, this one {len(row)}",
                            source=source, line=number)
        statement_id = row[0].removesuffix(".json")
        claims.append(
            _make_claim(
                {
                    "id": f"liar:{statement_id}",
                    "text": row[2],
                    "verdict": row[1].strip(),
                    "verdict_original": row[1],
                    "language": "en",
                    "publisher": "PolitiFact",
                    "url": None,
                },
                source,
                number,
                notes,
            )
        )
    return claims


def _snopes_id(url: str) -> str:
    slug = re.sub(r"^https?://(www\.)?snopes\.com/", "", url).strip("/")
    return "snopes:" + (slug or stable_id(url))


def _read_snopes(text: str, source: str, notes: ClaimFile) -> list[Claim]:
    """The Snopes scrape: `statement` is the claim (the headline `title` when empty)."""
    claims = []
    for number, row in _json_rows(text, source):
        if not row.get("url"):
            raise DataError("a Snopes row needs a 'url'", source=source, line=number)
        claim_text = (row.get("statement") or "").strip() or (row.get("title") or "").strip()
        claims.append(
            _make_claim(
                {
                    "id": _snopes_id(str(row["url"])),
                    "text": claim_text,
                    "verdict": row.get("rating") or "",
                    "verdict_original": row.get("rating"),
                    "language": "en",
                    "publisher": "Snopes",
                    "url": row["url"],
                    "date": row.get("date_iso"),
                },
                source,
                number,
                notes,
            )
        )
    return claims


# -- schema.org ClaimReview ------------------------------------------------------------


def _read_claimreview(text: str, source: str, notes: ClaimFile) -> list[Claim]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"not JSON: {exc.msg}", source=source, line=exc.lineno) from None
    items = _claimreview_items(doc)
    if not items:
        raise DataError("no ClaimReview objects found (need \"@type\": \"ClaimReview\")", source=source)
    return [_from_claimreview(item, source, number, notes) for number, item in enumerate(items, start=1)]


def _claimreview_items(doc: Any) -> list[Any]:
    if isinstance(doc, list):
        return [x for item in doc for x in _claimreview_items(item)]
    if isinstance(doc, dict):
        if "@graph" in doc:
            return _claimreview_items(doc["@graph"])
        kind = doc.get("@type")
        kinds = kind if isinstance(kind, list) else [kind]
        if "ClaimReview" in kinds:
            return [doc]
    return []


def _from_claimreview(item: dict[str, Any], source: str, number: int, notes: ClaimFile) -> Claim:
    where = f"{source} (ClaimReview #{number})"
    rating = item.get("reviewRating")
    if not isinstance(rating, dict):
        raise DataError("ClaimReview has no reviewRating object", source=where)
    verdict = rating.get("alternateName") or rating.get("name")
    if not verdict and rating.get("ratingValue") is not None:
        verdict = _verdict_from_scale(rating, where)
    if not verdict:
        raise DataError("reviewRating has neither alternateName nor ratingValue", source=where)
    author = item.get("author")
    publisher = author.get("name") if isinstance(author, dict) else author if isinstance(author, str) else None
    reviewed = item.get("itemReviewed") if isinstance(item.get("itemReviewed"), dict) else {}
    row = {
        "id": item.get("identifier") or item.get("@id") or item.get("url"),
        "text": item.get("claimReviewed"),
        "verdict": str(verdict),
        "verdict_original": str(verdict),
        "language": item.get("inLanguage") or reviewed.get("inLanguage"),
        "url": item.get("url"),
        "publisher": publisher,
        "date": item.get("datePublished"),
        "topic": item.get("about") if isinstance(item.get("about"), str) else None,
    }
    return _make_claim(row, where, None, notes)


def _verdict_from_scale(rating: dict[str, Any], where: str) -> str:
    """Numeric ratings (worst..best) mapped onto five bands."""
    try:
        value = float(rating["ratingValue"])
        best = float(rating.get("bestRating", 5))
        worst = float(rating.get("worstRating", 1))
    except (TypeError, ValueError):
        raise DataError("reviewRating.ratingValue is not a number", source=where) from None
    if best == worst:
        raise DataError("reviewRating has bestRating == worstRating", source=where)
    position = (value - worst) / (best - worst)
    bands = ["false", "mostly false", "mixed", "mostly true", "true"]
    return bands[min(4, max(0, int(position * 5 - 1e-9)))]


def to_claimreview(claims: Iterable[Claim]) -> list[dict[str, Any]]:
    """Claims as schema.org ClaimReview objects (JSON-LD), the original rating as alternateName."""
    out = []
    for claim in claims:
        item: dict[str, Any] = {
            "@context": "https://schema.org",
            "@type": "ClaimReview",
            "identifier": claim.id,
            "claimReviewed": claim.text,
            "reviewRating": {
                "@type": "Rating",
                "alternateName": claim.verdict_original or claim.verdict.value,
                "name": claim.verdict.value,
            },
            "inLanguage": claim.language,
        }
        if claim.url:
            item["url"] = claim.url
        if claim.publisher:
            item["author"] = {"@type": "Organization", "name": claim.publisher}
        if claim.date:
            item["datePublished"] = claim.date
        if claim.topic:
            item["about"] = claim.topic
        out.append(item)
    return out
