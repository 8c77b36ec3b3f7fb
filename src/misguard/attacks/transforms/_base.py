"""Text transformations an adversary uses to disguise a text from a guard, registered by
name in `TRANSFORMS`, composable ("homoglyph+leet"), seeded and recorded.

A spec names one or more transformations joined by "+", each with optional parameters:
`homoglyph:rate=0.6+leet:rate=0.5`. `compose(spec)` builds a `Pipeline`; its `describe()`
lists every step with the parameters in force, so a run log rebuilds the same set; and
`Pipeline.apply(text, seed=..., key=...)` draws its randomness from (seed, key, step), so
the same text, seed and key always give the same disguise, whatever else ran before.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import ConfigError
from ...registry import Registry

#: Families, in the order reports list them.
FAMILIES = ("character", "word", "code-switch", "transliteration", "paraphrase", "markup", "injection")

TRANSFORMS: Registry[TransformSpec] = Registry(
    "text transform",
    plugins=(
        "misguard.attacks.transforms._chars", "misguard.attacks.transforms._words",
        "misguard.attacks.transforms._markup", "misguard.attacks.transforms._inject",
        "misguard.attacks.transforms._paraphrase",
    ),
    entry_point_group="misguard.transforms",
)


@dataclass(frozen=True)
class Context:
    """What a transformation may know about the text it disguises.

    Attributes:
        language: ISO 639-1 code of the text ("en", "fr", ...; "und" when unknown).
        llm: an `misguard.llm.LLM` for the LLM-backed transformations (None otherwise).
    """

    language: str = "en"
    llm: Any = None


#: fn(text, rng, context, **params) -> disguised text
TransformFn = Callable[..., str]


@dataclass(frozen=True)
class TransformSpec:
    """One registered transformation: its function, family, default parameters and the
    languages it applies to (empty: any)."""

    name: str
    fn: TransformFn
    family: str
    defaults: dict[str, Any]
    description: str
    languages: tuple[str, ...] = ()
    llm: bool = False
    #: "text" (plain text in, plain text out) or "html" (plain text in, an HTML page out)
    output: str = "text"


def transform(
    name: str, *, family: str, description: str, languages: tuple[str, ...] = (), llm: bool = False,
    output: str = "text", **defaults: Any,
) -> Callable[[TransformFn], TransformFn]:
    """Register `fn(text, rng, context, **params)` under `name` with its default parameters."""
    if family not in FAMILIES:
        raise ConfigError(f"unknown transform family {family!r}; use one of {', '.join(FAMILIES)}")

    def decorator(fn: TransformFn) -> TransformFn:
        spec = TransformSpec(name, fn, family, dict(defaults), description, languages, llm, output)
        TRANSFORMS.register(name, family=family, llm=llm)(lambda: spec)
        return fn

    return decorator


def get_transform(name: str) -> TransformSpec:
    return TRANSFORMS.get(name).factory()


def all_transforms() -> list[TransformSpec]:
    return [get_transform(name) for name in TRANSFORMS.names()]


@dataclass(frozen=True)
class Step:
    spec: TransformSpec
    params: dict[str, Any]

    def describe(self) -> dict[str, Any]:
        return {"name": self.spec.name, "family": self.spec.family, "params": dict(self.params)}


@dataclass(frozen=True)
class Pipeline:
    """Transformations applied in order (a composed spec)."""

    steps: tuple[Step, ...]
    name: str = field(default="")

    @property
    def family(self) -> str:
        families = {s.spec.family for s in self.steps}
        return families.pop() if len(families) == 1 else "composed"

    @property
    def llm(self) -> bool:
        return any(s.spec.llm for s in self.steps)

    @property
    def output(self) -> str:
        return "html" if any(s.spec.output == "html" for s in self.steps) else "text"

    @property
    def languages(self) -> tuple[str, ...]:
        """Languages every step applies to (empty: any)."""
        sets = [set(s.spec.languages) for s in self.steps if s.spec.languages]
        if not sets:
            return ()
        return tuple(sorted(set.intersection(*sets)))

    def applies_to(self, language: str) -> bool:
        return not self.languages or language in self.languages

    def apply(self, text: str, *, seed: int = 0, key: str = "", context: Context | None = None) -> str:
        """The disguised text; the randomness of step i comes from (seed, key, i) alone."""
        context = context or Context()
        if self.llm and context.llm is None:
            raise ConfigError(f"transform {self.name!r} needs an LLM; pass one (e.g. --llm local/qwen2.5-1.5b)")
        for i, step in enumerate(self.steps):
            if step.spec.output == "html" and i != len(self.steps) - 1:
                raise ConfigError(f"{step.spec.name!r} writes HTML: it can only be the last step of {self.name!r}")
            rng = random.Random(f"{seed}:{key}:{i}:{step.spec.name}")
            text = step.spec.fn(text, rng, context, **step.params)
        return text

    def describe(self) -> dict[str, Any]:
        return {"spec": self.name, "family": self.family, "steps": [s.describe() for s in self.steps]}


def _value(raw: str) -> Any:
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    return raw


def compose(spec: str, overrides: Mapping[str, Any] | None = None) -> Pipeline:
    """Build a `Pipeline` from "name[:k=v,...]+name..." (unknown names or parameters are
    a `ConfigError` naming the known ones)."""
    steps = []
    for part in spec.split("+"):
        part = part.strip()
        if not part:
            raise ConfigError(f"empty step in transform spec {spec!r}")
        name, _, raw = part.partition(":")
        entry = get_transform(name.strip())
        params = dict(entry.defaults)
        for item in filter(None, (p.strip() for p in raw.split(","))):
            key, eq, value = item.partition("=")
            if not eq or key not in entry.defaults:
                known = ", ".join(f"{k}={v}" for k, v in entry.defaults.items()) or "none"
                raise ConfigError(f"transform {entry.name!r} has no parameter {item!r}; its parameters: {known}")
            params[key] = _value(value)
        for key, value in (overrides or {}).items():
            if key in params:
                params[key] = value
        steps.append(Step(entry, params))
    return Pipeline(tuple(steps), spec)


def word_spans(text: str, pattern: Any) -> list[tuple[int, int]]:
    """(start, end) of every match of `pattern` in `text`."""
    return [(m.start(), m.end()) for m in pattern.finditer(text)]


def choose(rng: random.Random, items: list[Any], rate: float, *, at_least_one: bool = True) -> list[Any]:
    """A seeded sample of about `rate` of `items` (at least one when any and `at_least_one`)."""
    if not items or rate <= 0:
        return []
    n = round(rate * len(items))
    if at_least_one:
        n = max(1, n)
    return sorted(rng.sample(range(len(items)), min(n, len(items))))
