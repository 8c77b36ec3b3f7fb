"""`misguard bench long-text` builds its pages from real statements and the sample claims."""

from __future__ import annotations

from misguard.bench.longtext import CLAIM_EVERY, build_page, sample_claims


def test_page_has_the_words_paragraphs_and_claims_asked_for():
    prose = [f"Statement number {i} says something about the budget" for i in range(50)]
    claims = sample_claims()
    page = build_page(prose, claims, 600, start=10)
    inserted = [c for c in claims if c in page]
    prose_words = len(page.split()) - sum(len(c.split()) for c in inserted)
    assert 600 <= prose_words < 620
    paragraphs = page.split("\n\n")
    assert len(paragraphs) > 5 and all(p.count(". ") <= 4 for p in paragraphs)
    assert page.startswith("Statement number 10 ")
    assert len(inserted) == page.count("Statement number") // CLAIM_EVERY
    assert build_page(prose, claims, 600, start=10) == page != build_page(prose, claims, 600, start=11)
