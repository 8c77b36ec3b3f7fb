"""The transformations each target is measured against by default."""

from __future__ import annotations

#: claims: every non-LLM family, the brief's strongest character attacks composed, and
#: prompt injection in four styles (the texts' own languages).
CLAIMS_SUITE = (
    "homoglyph", "zero-width", "bidi", "leet", "spacing", "punctuation", "diacritics", "fullwidth", "case",
    "homoglyph+leet", "homoglyph+leet+spacing",
    "synonym", "hedge", "negation-noise", "split", "code-switch:to=fr", "code-switch:to=es", "transliterate",
    "markup-alt", "markup-aria", "markup-hidden", "markup-split", "markup-entities",
    "inject:style=note", "inject:style=ignore", "inject:style=roleplay", "inject:style=json",
)
#: MisInfoTask messages: the hijacked agent's disguises and its notes to the rectifier.
MISINFOTASK_SUITE = (
    "homoglyph", "leet", "spacing", "bidi", "homoglyph+leet", "synonym", "hedge", "negation-noise", "split",
    "inject:style=rectifier", "inject:style=rectifier,position=start",
)


def default_suite(target: str) -> tuple[str, ...]:
    return {"claims": CLAIMS_SUITE, "misinfotask": MISINFOTASK_SUITE}.get(target, ())
