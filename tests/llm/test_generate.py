from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from misguard.config import LLMSettings
from misguard.errors import LLMOutputError, LLMRequestError, LLMServerError, LLMTimeoutError
from misguard.llm import get_llm
from misguard.llm._base import GenerateOptions, RawCompletion
from misguard.llm._mock import MockLLM

FAST = LLMSettings(model="mock", retries=2, backoff_s=0.0, timeout_s=5)


def mock(**kwargs) -> MockLLM:
    llm = get_llm("mock", FAST, **kwargs)
    assert isinstance(llm, MockLLM)
    return llm


async def test_generate_counts_tokens_and_calls():
    llm = mock(outputs=["hello there"])
    out = await llm.generate("say hello")
    assert out.text == "hello there"
    assert (out.prompt_tokens, out.completion_tokens, out.attempts) == (2, 2, 1)
    assert llm.usage.calls == 1 and llm.usage.total_tokens == 4


async def test_transient_errors_are_retried_then_succeed():
    llm = mock(outputs=[LLMServerError("boom"), LLMServerError("boom"), "fine"])
    out = await llm.generate("x")
    assert out.text == "fine" and out.attempts == 3


async def test_transient_errors_exhaust_retries_with_clear_error():
    llm = mock(outputs=[LLMServerError("boom")] * 3)
    with pytest.raises(LLMServerError, match="after 3 attempts"):
        await llm.generate("x")
    assert llm.usage.failed_calls == 1 and len(llm.calls) == 3


async def test_request_errors_are_not_retried():
    llm = mock(outputs=[LLMRequestError("bad request"), "never"])
    with pytest.raises(LLMRequestError):
        await llm.generate("x")
    assert len(llm.calls) == 1


async def test_timeout_is_enforced():
    class Slow(MockLLM):
        async def _call_model(self, messages, options: GenerateOptions) -> RawCompletion:
            await asyncio.sleep(10)
            raise AssertionError("unreachable")

    llm = Slow("", FAST.model_copy(update={"timeout_s": 0.05, "retries": 1}))
    with pytest.raises(LLMTimeoutError, match="no answer within"):
        await llm.generate("x")


async def test_concurrency_limit_is_respected():
    active = 0
    peak = 0

    class Counting(MockLLM):
        async def _call_model(self, messages, options):
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.01)
            active -= 1
            return RawCompletion(text="ok")

    llm = Counting("", FAST.model_copy(update={"concurrency": 3}))
    await asyncio.gather(*(llm.generate(f"q{i}") for i in range(12)))
    assert peak == 3


async def test_disk_cache_serves_repeats(tmp_path):
    settings = FAST.model_copy(update={"cache_dir": tmp_path})
    llm = get_llm("mock", settings, outputs=["first", "second"])
    a = await llm.generate("same", temperature=0.0, seed=1)
    b = await llm.generate("same", temperature=0.0, seed=1)
    c = await llm.generate("same", temperature=0.0, seed=2)
    assert (a.text, b.text, c.text) == ("first", "first", "second")
    assert b.cached and not c.cached
    # a new process (new object) reads the same cache
    again = get_llm("mock", settings, outputs=["third"])
    assert (await again.generate("same", temperature=0.0, seed=1)).text == "first"


async def test_generate_json_reasks_once_then_parses():
    llm = mock(outputs=["I think yes", '{"answer": "yes"}'])
    assert await llm.generate_json("q") == {"answer": "yes"}
    assert "could not be parsed" in llm.calls[1][-1].content


async def test_generate_json_validates_schema():
    class Answer(BaseModel):
        verdict: bool

    llm = mock(outputs=['{"verdict": "maybe"}', '{"verdict": "perhaps"}'])
    with pytest.raises(LLMOutputError, match="did not match Answer"):
        await llm.generate_json("q", schema=Answer)
    llm = mock(outputs=['{"verdict": true}'])
    assert (await llm.generate_json("q", schema=Answer)).verdict is True


async def test_generate_json_never_reads_a_cut_off_answer():
    # Cut off at the limit (4 words here): its inner object would parse, and must not.
    llm = mock(outputs=['{"a": [{"b": 1}, {"c"', '{"a": []}'])
    assert await llm.generate_json("q", max_tokens=4) == {"a": []}
    assert "cut off at max_tokens=4" in llm.calls[1][-1].content
    llm = mock(outputs=['{"a": [{"b": 1}, {"c"'] * 2)
    with pytest.raises(LLMOutputError, match="cut off at max_tokens=4"):
        await llm.generate_json("q", max_tokens=4)


async def test_generate_json_gives_up_with_clear_error():
    llm = mock(outputs=["no json here", "still none"])
    with pytest.raises(LLMOutputError, match="Expected a JSON object"):
        await llm.generate_json("q")


def test_sync_wrapper_and_defaults_recorded():
    llm = mock(respond=lambda msgs: msgs[-1].content.upper())
    assert llm.generate_sync("abc").text == "ABC"
    assert llm.default_options().temperature == 0.0 and llm.default_options().seed == 0
    assert llm.describe()["backend"] == "mock"


def test_unknown_options_are_errors():
    llm = mock()
    with pytest.raises(ValueError):
        llm.default_options(temprature=0.5)
