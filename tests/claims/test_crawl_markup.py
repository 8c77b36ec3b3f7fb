"""The page checker reads what an agent or a screen reader reads."""

from __future__ import annotations

import pytest

from misguard.attacks.transforms import compose
from misguard.claims import crawl

pytest.importorskip("trafilatura")
CLAIM = "Bleach cures the flu, according to doctors who announced it after a study in 2020."


@pytest.mark.parametrize("spec", ["markup-plain", "markup-alt", "markup-aria", "markup-hidden", "markup-split",
                                  "markup-entities"])
def test_a_claim_hidden_in_markup_reaches_a_chunk(spec):
    chunks = [c.text for c in crawl(compose(spec).apply(CLAIM, seed=0), html=True)]
    assert any(CLAIM in c for c in chunks), chunks


def test_short_attribute_text_is_not_a_chunk():
    page = ('<html><body><p>Water boils at a lower temperature in the mountains, said the guide.</p>'
            '<img alt="logo"><img alt="Company logo, blue"></body></html>')
    texts = [c.text for c in crawl(page, html=True)]
    assert "logo" not in texts and "Company logo, blue" in texts


def test_chinese_alt_text_is_read():
    claim = "澳大利亚议会投票决定将悉尼定为国家的正式首都。"
    assert any(claim in c.text for c in crawl(compose("markup-alt").apply(claim), html=True))
