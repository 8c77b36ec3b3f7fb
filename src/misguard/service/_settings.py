"""What one service process is allowed to do: keys, origins, limits, fetching."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from ..config import EmbedSettings, LLMSettings

#: Origins of browser extensions (Chrome/Chromium, Edge, Firefox); allowed by CORS when
#: `allow_extensions` is on. A key is still needed: CORS only decides who may read answers.
EXTENSION_ORIGINS = r"^(chrome-extension|moz-extension|edge-extension)://[a-zA-Z0-9_-]+$"


class ServiceSettings(BaseModel):
    """Settings of `misguard serve` (built by the CLI from flags and `misguard.config`).

    Every limit bounds what one request can cost; the defaults suit one process on a small
    machine.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    db: str
    """Claim store: a directory, or a Qdrant collection (`qdrant:DIR`, `qdrant+http://HOST:6333/COLLECTION`);
    `misguard claims add --db DB ...` fills it."""

    embed: EmbedSettings = Field(default_factory=EmbedSettings)
    """The embedder the store was built with."""
    decision: Path | None = None
    """A fitted decision model (default: the one shipped for the embedder)."""
    threshold: float | None = None
    """A plain cosine threshold instead of the fitted decision (the naive baseline)."""
    reader: str | None = None
    """A pair reader for social-media text (`st/minilm`, or a trained reader's directory); with
    an embedding reader and no `decision`, the shipped decision fitted with it."""
    judge: bool = False
    """Let the paper's LLM judge (`llm`) make the final call on each text (slow: one call per text)."""
    llm: LLMSettings = Field(default_factory=LLMSettings)
    api_keys: list[SecretStr] = Field(default_factory=list)
    """Keys allowed to check texts and pages (`Authorization: Bearer KEY`)."""
    admin_keys: list[SecretStr] = Field(default_factory=list)
    """Keys allowed to check and to manage the claim store (`/v1/claims`)."""
    cors_origins: list[str] = Field(default_factory=list)
    """Web origins allowed to call the API from a page, e.g. `https://news.example`."""
    allow_extensions: bool = True
    """Let browser extensions (chrome-extension://..., moz-extension://...) call the API."""
    rate_limit: str = "1200/minute"
    """Per-key limit on check requests, in the `limits` syntax (`"20/second;1200/minute"`)."""
    admin_rate_limit: str = "60/minute"
    auth_failure_limit: str = "10/minute"
    """Failed authentications (missing or wrong key) allowed per client address; beyond it,
    every request from that address answers 429 until the window ends."""
    rate_limit_storage: str = "memory://"
    """Where counters live: `memory://` for one process, `redis://host:6379` for replicas."""
    max_body_bytes: int = Field(2_000_000, ge=1_000)
    """Larger request bodies are refused with 413 before they are read."""
    max_batch: int = Field(64, ge=1, le=4096)
    """Texts per `/v1/check` request."""
    max_text_chars: int = Field(20_000, ge=1)
    """Characters per text; a page's HTML may be up to `max_body_bytes`."""
    max_page_blocks: int = Field(400, ge=1)
    """Blocks checked per page (the rest are reported as skipped)."""
    request_timeout_s: float = Field(30.0, gt=0)
    """A check that takes longer answers 503 (the work is not lost for the cache)."""
    batch_window_ms: float = Field(0.0, ge=0)
    """How long the batcher waits for more texts while some keep arriving, per window (0:
    it checks at once what has arrived, and texts that come meanwhile form the next batch,
    which measured faster at 1, 8 and 32 clients than waiting 5 ms)."""
    batch_max_wait_ms: float = Field(100.0, ge=0)
    """The longest a batch waits to fill up (used when batches are slow)."""
    allow_url_fetch: bool = False
    """Let `/v1/check/page` fetch a `url` (public addresses only unless `allow_private_urls`)."""
    allow_private_urls: bool = False
    """Also fetch loopback, private and link-local addresses (tests, intranets). Never on a
    public deployment: it opens the service to SSRF."""
    fetch_timeout_s: float = Field(10.0, gt=0)
    fetch_max_bytes: int = Field(2_000_000, ge=1_000)
    fetch_max_redirects: int = Field(5, ge=0, le=20)
    reload_check_s: float = Field(1.0, ge=0)
    """Not used any more (accepted so that existing settings still load): every batch checks
    the store's generation on disk, one SQLite read, and reloads when another process wrote."""

    @field_validator("db", mode="before")
    @classmethod
    def _path_as_text(cls, value: object) -> object:
        return str(value) if isinstance(value, Path) else value
