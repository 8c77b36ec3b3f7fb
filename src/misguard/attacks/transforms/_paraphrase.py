"""Paraphrase by an LLM (the local pack by default): the same claim in other words, the
strongest word-level disguise and the slowest."""

from __future__ import annotations

import random

from ...prompts import load_prompts
from ._base import Context, transform


@transform("paraphrase-llm", family="paraphrase", llm=True, max_tokens=160,
           description="the text paraphrased by the LLM (prompt `paraphrase` of attacks/prompts/transforms.toml)")
def paraphrase_llm(text: str, rng: random.Random, context: Context, *, max_tokens: int) -> str:
    prompts = load_prompts("misguard.attacks", "transforms")
    out = context.llm.generate_sync(prompts.render("paraphrase", text=text), max_tokens=max_tokens).text.strip()
    return out.strip().strip('"') or text
