"""Errors misguard raises. Every error a user sees derives from `MisguardError` and says
what to do about it.

    MisguardError
    ├── ConfigError              bad settings file, unknown key, bad model spec
    ├── MissingExtraError        an optional dependency is not installed (names the extra)
    ├── ModelPackError           an assembled model pack does not match its pinned sha256
    ├── DataError                malformed input data (names the file and line)
    ├── BackendError             a model backend failed
    │   ├── LLMError
    │   │   ├── LLMTimeoutError      the call took longer than the configured timeout
    │   │   ├── LLMConnectionError   the endpoint could not be reached
    │   │   ├── LLMServerError       the endpoint answered 5xx / 429
    │   │   ├── LLMRequestError      the endpoint rejected the request (4xx)
    │   │   └── LLMOutputError       the model's text could not be parsed (e.g. no JSON)
    │   └── EmbeddingError
    └── StoreError               a persistent store is missing, locked or corrupt
"""

from __future__ import annotations


class MisguardError(Exception):
    """Base of every error misguard raises on purpose."""


class ConfigError(MisguardError):
    """Settings are invalid: an unknown key, a bad value or a bad model spec."""


class MissingExtraError(MisguardError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    def __init__(self, package: str, extra: str, purpose: str = "") -> None:
        self.package = package
        self.extra = extra
        what = f" for {purpose}" if purpose else ""
        super().__init__(
            f"The optional package {package!r} is needed{what}. "
            f"Install it with: pip install 'misguard[{extra}]'"
        )


class ModelPackError(MisguardError):
    """A model pack's parts do not assemble into the pinned file; says how to reinstall."""


class DataError(MisguardError, ValueError):
    """Input data is malformed. Carries the source and line when known."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None):
        self.source = source
        self.line = line
        where = ""
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        super().__init__(f"{where}{message}")


class BackendError(MisguardError):
    """A model backend failed."""


class LLMError(BackendError):
    """An LLM call failed after the configured retries."""

    #: Whether retrying the same call may succeed.
    transient: bool = False


class LLMTimeoutError(LLMError):
    transient = True


class LLMConnectionError(LLMError):
    transient = True


class LLMServerError(LLMError):
    transient = True


class LLMRequestError(LLMError):
    transient = False


class LLMOutputError(LLMError):
    """The model answered, but its text could not be parsed as required."""

    transient = False

    def __init__(self, message: str, *, text: str = "") -> None:
        self.text = text
        snippet = text if len(text) <= 300 else text[:300] + "..."
        super().__init__(f"{message}. Model output was: {snippet!r}")


class EmbeddingError(BackendError):
    """An embedding call failed."""


class StoreError(MisguardError):
    """A persistent store is missing, locked or corrupt."""
