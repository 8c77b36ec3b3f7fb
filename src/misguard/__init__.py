"""misguard: find and correct misinformation in LLM multi-agent systems and on the web."""

from __future__ import annotations

__version__ = "0.1.0"

from .config import EmbedSettings, LLMSettings, Settings, load_settings
from .errors import (
    BackendError,
    ConfigError,
    DataError,
    EmbeddingError,
    LLMConnectionError,
    LLMError,
    LLMOutputError,
    LLMRequestError,
    LLMServerError,
    LLMTimeoutError,
    MisguardError,
    MissingExtraError,
    StoreError,
)
from .types import (
    ChatMessage,
    Claim,
    EdgeMessage,
    Evidence,
    MemoryRecord,
    Provenance,
    Usage,
    Verdict,
    VerdictLabel,
)

__all__ = [
    "BackendError",
    "ChatMessage",
    "Claim",
    "ConfigError",
    "DataError",
    "EdgeMessage",
    "EmbedSettings",
    "EmbeddingError",
    "Evidence",
    "LLMConnectionError",
    "LLMError",
    "LLMOutputError",
    "LLMRequestError",
    "LLMServerError",
    "LLMSettings",
    "LLMTimeoutError",
    "MemoryRecord",
    "MisguardError",
    "MissingExtraError",
    "Provenance",
    "Settings",
    "StoreError",
    "Usage",
    "Verdict",
    "VerdictLabel",
    "__version__",
    "load_settings",
]
