"""The Snopes scrape's claim file, rebuilt from its raw files.

Upstream's `<rating>-stories.json` files are JSON arrays written one `"key": "value",` per
line, but some values hold unescaped double quotes, so `json.load` fails on most of them.
Every record does parse line by line. `snopes_claims.jsonl` holds every record, in raw-file
order (files sorted by name): `rating` is upstream's `evaluation`, `post_author` (always
empty) is dropped, `date_iso` is `date_posted` parsed ("9 October 2020"), `source_file`
names the raw file. The result is pinned by sha256, so this rebuild is checked byte for byte.
"""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

from ..errors import DataError

_FIELD = re.compile(r'^\s*"([a-z_]+)":\s*"(.*)",?\s*$')
_BARE_QUOTE = re.compile(r'(?<!\\)"')
_KEYS = ("url", "evaluation", "title", "subtitle", "statement", "author", "date_posted")


def derive_snopes_claims(source: Path, out: Path) -> None:
    """Write `out/snopes_claims.jsonl` from the raw files in `source/raw/`."""
    raw = sorted((source / "raw").glob("*-stories.json"))
    if not raw:
        raise DataError("no raw/*-stories.json files to build snopes_claims.jsonl from", source=str(source))
    lines = []
    for path in raw:
        for record in _records(path):
            row = {
                "url": record["url"], "rating": record["evaluation"], "title": record["title"],
                "subtitle": record["subtitle"], "statement": record["statement"], "author": record["author"],
                "date_posted": record["date_posted"], "date_iso": _iso_date(record["date_posted"]),
                "source_file": f"raw/{path.name}",
            }
            lines.append(json.dumps(row, ensure_ascii=False) + "\n")
    out.mkdir(parents=True, exist_ok=True)
    (out / "snopes_claims.jsonl").write_text("".join(lines), encoding="utf-8")


def _records(path: Path) -> list[dict[str, str]]:
    records: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        stripped = line.strip()
        if stripped == "{":
            current = {}
        elif stripped in ("}", "},"):
            if current is None or not set(_KEYS) <= current.keys():
                raise DataError("record without every field (url, evaluation, title, ...)", source=str(path), line=number)
            records.append(current)
            current = None
        elif stripped in ("[", "]", ""):
            continue
        else:
            match = _FIELD.match(line)
            if match is None or current is None:
                raise DataError('expected one "key": "value" per line', source=str(path), line=number)
            current[match.group(1)] = _decode(match.group(2))
    return records


def _decode(value: str) -> str:
    try:
        return json.loads(f'"{value}"')
    except json.JSONDecodeError:
        return json.loads('"' + _BARE_QUOTE.sub(r'\\"', value) + '"')


_MONTHS = {name: i for i, name in enumerate(
    "january february march april may june july august september october november december".split(), start=1)}


def _iso_date(text: str) -> str | None:
    """"9 October 2020" -> "2020-10-09" (English month names whatever the locale)."""
    parts = text.split()
    if len(parts) != 3 or parts[1].lower() not in _MONTHS:
        return None
    try:
        return date(int(parts[2]), _MONTHS[parts[1].lower()], int(parts[0])).isoformat()
    except ValueError:
        return None
