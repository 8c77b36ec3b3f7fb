"""Disguises in markup: a page whose visible text is harmless while the claim sits where
an agent or a screen reader still reads it (image alt text, aria-label, a CSS-hidden
span), or whose words are cut by inline tags or written as character references.

Each writes a whole HTML page; the page checker (`ClaimGuard.check_document`) reads it
the way the browser extension and `POST /v1/check/page` do."""

from __future__ import annotations

import html
import random
import re

from ._base import Context, choose, transform

_COVERS = (
    "Photos from this week's community events.",
    "Read our latest newsletter for updates from the team.",
    "Thanks for visiting; more stories below.",
    "Share this page with your friends.",
)
_WORD = re.compile(r"[^\W\d_]{4,}")


def page(body: str, title: str = "News") -> str:
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title></head>"
            f"<body><article><h1>{html.escape(title)}</h1>{body}</article></body></html>")


def _cover(rng: random.Random) -> str:
    return f"<p>{html.escape(rng.choice(_COVERS))}</p>"


@transform("markup-plain", family="markup", output="html",
           description="the text as a plain paragraph of a page (the undisguised baseline of the markup family)")
def markup_plain(text: str, rng: random.Random, context: Context) -> str:
    return page(f"<p>{html.escape(text)}</p>")


@transform("markup-alt", family="markup", output="html",
           description="the text as an image's alt text; the visible paragraph is harmless")
def markup_alt(text: str, rng: random.Random, context: Context) -> str:
    return page(f"{_cover(rng)}<figure><img src=\"photo.jpg\" alt=\"{html.escape(text, quote=True)}\"></figure>")


@transform("markup-aria", family="markup", output="html",
           description="the text in an aria-label of an element with harmless visible text")
def markup_aria(text: str, rng: random.Random, context: Context) -> str:
    return page(f"<div role=\"note\" aria-label=\"{html.escape(text, quote=True)}\">{_cover(rng)}</div>")


@transform("markup-hidden", family="markup", output="html",
           description="the text in a CSS-hidden span inside a harmless paragraph")
def markup_hidden(text: str, rng: random.Random, context: Context) -> str:
    cover = html.escape(rng.choice(_COVERS))
    return page(f"<p>{cover} <span style=\"display:none\">{html.escape(text)}</span></p>")


@transform("markup-split", family="markup", output="html", rate=0.5,
           description="a share of the words cut in two by inline tags (<b>vac</b><i>cine</i>)")
def markup_split(text: str, rng: random.Random, context: Context, *, rate: float) -> str:
    words = list(_WORD.finditer(text))
    chosen = {words[j].start() for j in choose(rng, words, rate)}
    out, last = [], 0
    for m in words:
        out.append(html.escape(text[last:m.start()]))
        word = m.group()
        if m.start() in chosen:
            i = rng.randrange(1, len(word))
            out.append(f"<span>{html.escape(word[:i])}</span><b>{html.escape(word[i:])}</b>")
        else:
            out.append(html.escape(word))
        last = m.end()
    out.append(html.escape(text[last:]))
    return page(f"<p>{''.join(out)}</p>")


@transform("markup-entities", family="markup", output="html", rate=0.5,
           description="a share of the letters written as numeric character references (&#118;accine)")
def markup_entities(text: str, rng: random.Random, context: Context, *, rate: float) -> str:
    positions = [i for i, ch in enumerate(text) if ch.isalpha()]
    chosen = {positions[j] for j in choose(rng, positions, rate)}
    body = "".join(f"&#{ord(ch)};" if i in chosen else html.escape(ch) for i, ch in enumerate(text))
    return page(f"<p>{body}</p>")
