"""Regenerate src/misguard/claims/data/confusables.json: the look-alike letters the claim
guard folds (`misguard.claims._unmask`), from Unicode's confusables as packaged by
`confusable-homoglyphs` (in the `test` extra; tests/claims/test_confusables_table.py checks the shipped table
is what this builds).

    python tools/build_confusables.py > src/misguard/claims/data/confusables.json

Kept: letters of the Cyrillic, Greek, Armenian and Cherokee scripts and Latin letters
outside ASCII that Unicode lists as confusable with one ASCII letter (-> "to_latin"), and
for each ASCII letter its Cyrillic look-alikes (-> "to_cyrillic", used in Cyrillic texts).
"""

from __future__ import annotations

import json
import os
import unicodedata

import confusable_homoglyphs
from confusable_homoglyphs import confusables  # noqa: F401  (the data file sits beside it)

SCRIPTS = ("CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "LATIN")
#: Where the skeleton's prototype is not the letter a reader sees: UTS #39 folds I, l and
#: 1 into "l", so uppercase I look-alikes read "l" ("lNDIA"); palochka is a lowercase l;
#: Greek kappa has no ASCII prototype but reads "k".
OVERRIDES = {"\u0406": "I", "\u0399": "I", "\u04c0": "I", "\u04cf": "l", "\u03ba": "k", "\u0456": "i"}


def build() -> dict[str, object]:
    """The table, as written to confusables.json."""
    path = os.path.join(os.path.dirname(confusable_homoglyphs.__file__), "confusables.json")
    data = json.load(open(path, encoding="utf-8"))
    to_latin: dict[str, str] = {}
    to_cyrillic: dict[str, str] = {}
    for ch, glyphs in sorted(data.items()):
        if len(ch) != 1 or not ch.isalpha():
            continue
        name = unicodedata.name(ch, "")
        script = name.split(" ")[0]
        ascii_letters = [g["c"] for g in glyphs if len(g["c"]) == 1 and g["c"].isascii() and g["c"].isalpha()]
        if script in SCRIPTS and not ch.isascii() and ascii_letters:
            to_latin[ch] = ascii_letters[0]
        if ch.isascii():
            cyr = [g["c"] for g in glyphs if len(g["c"]) == 1 and unicodedata.name(g["c"], "").startswith("CYRILLIC")]
            if cyr:
                to_cyrillic[ch] = cyr[0]
    to_latin.update(OVERRIDES)
    return {"source": f"Unicode confusables via confusable-homoglyphs {confusable_homoglyphs.__version__}",
            "to_latin": to_latin, "to_cyrillic": to_cyrillic}


def main() -> None:
    print(json.dumps(build(), ensure_ascii=False, indent=0, sort_keys=True))


if __name__ == "__main__":
    main()
