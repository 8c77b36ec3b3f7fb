"""Web crawler agent: text from plain text or HTML (trafilatura), split into chunks that
are each worth one check (a paragraph, or a few sentences of a long one).

An HTML page is read the way an agent or a screen reader reads it, not only as a sighted
reader sees it: inline formatting tags are unwrapped first (trafilatura cut a word split by
`<span>vac</span><b>cine</b>` into two lines), and the text of alt, aria-label and title
attributes (three words or more) is checked as paragraphs of its own (a claim hidden there
was not read at all; `misguard bench redteam`, markup family)."""

from __future__ import annotations

import html as html_lib
import re
from dataclasses import dataclass

from ..errors import DataError, MissingExtraError
from ._text import clean_text, words

_HTML_HINT = re.compile(r"<\s*(html|body|p|div|article|span|br|h[1-6])\b", re.IGNORECASE)
_PARAGRAPH = re.compile(r"\n\s*\n|\r\n\s*\r\n")
_LINE = re.compile(r"\n+")
_SENTENCE = re.compile(r"(?<=[.!?\u3002\uff01\uff1f\u0964\u061f])\s+")
MAX_SOURCE_CHARS = 5_000_000
#: formatting tags inside a line of text (superscripts and subscripts keep their tags: "10<sup>2</sup>")
_INLINE_TAG = re.compile(r"</?(?:span|b|i|em|strong|u|small|mark|font|abbr|s|del|ins|q|cite|tt|big|bdi|bdo|wbr)\b[^>]*>",
                         re.IGNORECASE)
_ATTRIBUTE_TEXT = re.compile(r"""\b(?:alt|aria-label|aria-description|title)\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)


@dataclass(frozen=True)
class Chunk:
    """A checkable piece of a crawled page; offsets point into the extracted text."""

    id: str
    text: str
    start: int
    end: int


def extract_text(source: str, *, html: bool | None = None) -> str:
    """Main text of an HTML page (trafilatura; the `claims` extra), or the text itself."""
    if html is None:
        html = bool(_HTML_HINT.search(source[:5000]))
    if not html:
        return source
    try:
        import trafilatura
    except ImportError:
        raise MissingExtraError("trafilatura", "claims", "extracting text from HTML") from None
    text = trafilatura.extract(_INLINE_TAG.sub("", source), include_comments=True, include_tables=False,
                               favor_recall=True) or ""
    hidden = [html_lib.unescape(a or b).strip() for a, b in _ATTRIBUTE_TEXT.findall(source)]
    extra = [h for h in dict.fromkeys(hidden) if words(h) >= 3 and h not in text]  # CJK characters count as words
    return "\n".join([text, *extra]) if extra else text


def crawl(source: str, *, html: bool | None = None, doc_id: str = "doc", max_chars: int = 600) -> list[Chunk]:
    """Split a page into chunks of at most about `max_chars` characters, by paragraph and
    then by sentence (a chunk never cuts a sentence in two unless it is longer itself)."""
    if len(source) > MAX_SOURCE_CHARS:
        raise DataError(f"page of {len(source):,} characters is over the {MAX_SOURCE_CHARS:,} limit; split it")
    is_html = bool(_HTML_HINT.search(source[:5000])) if html is None else html
    text = clean_text(extract_text(source, html=is_html))
    # trafilatura writes one paragraph per line; plain text marks them with blank lines.
    splitter = _LINE if is_html else _PARAGRAPH
    chunks: list[Chunk] = []
    position = 0
    for para in splitter.split(text):
        start = text.find(para, position)
        position = start + len(para)
        if not para.strip():
            continue
        spans = [(0, len(para))] if len(para) <= max_chars else _pack(para, max_chars)
        for a, b in spans:
            piece = para[a:b]
            stripped = piece.strip()
            if not stripped:
                continue
            lead = len(piece) - len(piece.lstrip())
            begin = start + a + lead
            chunks.append(Chunk(f"{doc_id}#{len(chunks)}", stripped, begin, begin + len(stripped)))
    return chunks


def _pack(paragraph: str, max_chars: int) -> list[tuple[int, int]]:
    """Spans of consecutive sentences, each at most `max_chars` long when possible."""
    ends = [m.end() for m in _SENTENCE.finditer(paragraph)] + [len(paragraph)]
    spans: list[tuple[int, int]] = []
    begin = previous = 0
    for end in ends:
        if end - begin > max_chars and previous > begin:
            spans.append((begin, previous))
            begin = previous
        previous = end
    spans.append((begin, len(paragraph)))
    return spans
