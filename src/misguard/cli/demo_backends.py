"""Demo section: real multilingual embeddings and one real local-model chat."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ..config import Settings
from ..embed import get_embedder
from ..llm import get_llm

CLAIM = "Drinking bleach cures the flu."
RENDERINGS = [
    ("fr", "Boire de l'eau de Javel guérit la grippe."),
    ("es", "Beber lejía cura la gripe."),
    ("zh", "喝漂白剂可以治愈流感。"),
    ("ar", "شرب المبيض يعالج الإنفلونزا."),
    ("en", "The Eiffel Tower is in Paris."),
]


def run(settings: Settings, console: Console) -> None:
    embedder = get_embedder(None, settings.embed)
    query = embedder.embed(CLAIM, "query")
    vectors = embedder.embed([text for _, text in RENDERINGS], "passage")
    table = Table(title=f"{embedder.spec}: cosine to {CLAIM!r}")
    for column in ("lang", "text", "cosine"):
        table.add_column(column)
    for (lang, text), vec in zip(RENDERINGS, vectors):
        table.add_row(lang, text, f"{float(vec @ query):.3f}")
    console.print(table)

    llm = get_llm(None, settings.llm)
    pack = llm.describe().get("pack") or {}
    console.print(f"LLM {llm.spec}: {pack.get('title') or llm.describe().get('path', '')}")
    out = llm.generate_sync(
        [
            {"role": "system", "content": "You are a careful fact-checker. Answer in one sentence."},
            {"role": "user", "content": f"Is this claim true or false? {CLAIM}"},
        ],
        max_tokens=48,
    )
    console.print(f"[bold]answer:[/] {out.text.strip()}", highlight=False)
    console.print(
        f"[dim]{out.prompt_tokens} prompt + {out.completion_tokens} completion tokens in "
        f"{out.latency_s:.2f} s (temperature {settings.llm.temperature}, seed {settings.llm.seed})[/]"
    )
