import pytest

from misguard.claims import crawl
from misguard.errors import DataError


def test_plain_text_paragraphs_and_offsets():
    text = "First paragraph here.\n\nSecond one is here.\n\n\nThird."
    chunks = crawl(text, html=False)
    assert [c.text for c in chunks] == ["First paragraph here.", "Second one is here.", "Third."]
    for c in chunks:
        assert text[c.start : c.end] == c.text


def test_long_paragraph_is_packed_by_sentence():
    para = " ".join(f"Sentence {i} says something." for i in range(100))
    chunks = crawl(para, html=False, max_chars=200)
    assert len(chunks) > 5 and all(len(c.text) <= 200 for c in chunks)
    assert all(c.text.endswith(".") for c in chunks)
    assert all(para[c.start : c.end] == c.text for c in chunks)


def test_html_goes_through_trafilatura():
    page = "<html><body><nav>Menu Home About</nav><article><p>One para.</p><p>Two para.</p></article></body></html>"
    texts = [c.text for c in crawl(page)]
    assert "One para." in texts and "Two para." in texts


def test_oversized_page_is_refused():
    with pytest.raises(DataError, match="limit"):
        crawl("x" * 5_000_001)
