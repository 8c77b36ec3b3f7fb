"""The pull demo section, on the real e5 embedder and the files shipped for it."""

from __future__ import annotations

import io

from rich.console import Console

from misguard.cli import demo, demo_pull
from misguard.config import Settings


def test_demo_section_pulls_twice_and_flags_the_article():
    assert any(module == "misguard.cli.demo_pull" for _, module in demo.SECTIONS)
    out = io.StringIO()
    demo_pull.run(Settings(embed={"model": "e5"}), Console(file=out, width=200))
    text = out.getvalue()
    assert "pulled 10 review(s) from http://127.0.0.1:" in text and "/feeds/claimreview.json" in text
    assert "pulled 1 review(s) from" in text and "store: 11 claims added" in text
    assert "pulled again: 0 added, 0 updated, 11 unchanged" in text
    assert "8 paragraphs checked, 4 repeat a pulled fact-check" in text
    for rated in ("rated False (Example Fact Desk)", "rated Trompeur", "rated Falso", "rated गलत"):
        assert rated in text
    assert "honey" not in text.split("repeat a pulled fact-check")[1].lower()  # the true claim is not flagged
