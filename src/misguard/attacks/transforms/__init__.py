"""Red-team transformations: how an adversary disguises a text from a guard. Registered by
name in `TRANSFORMS` (families: character, word, code-switch, transliteration, paraphrase,
markup, injection), composed with "+", seeded, recorded. `misguard bench redteam` measures
every guard against them.

    pipeline = compose("homoglyph:rate=0.6+leet")
    disguised = pipeline.apply("Bleach cures the flu", seed=0, key="q1")
    pipeline.describe()  # {"spec": ..., "steps": [{"name": "homoglyph", "params": {...}}, ...]}
"""

from ._base import FAMILIES, TRANSFORMS, Context, Pipeline, Step, TransformSpec, all_transforms, compose, get_transform, transform
from ._chars import HOMOGLYPHS
from ._inject import INJECTION_LANGUAGES, STYLES, injection_text
from ._markup import page

__all__ = [
    "FAMILIES", "HOMOGLYPHS", "INJECTION_LANGUAGES", "STYLES", "TRANSFORMS", "Context", "Pipeline", "Step",
    "TransformSpec", "all_transforms", "compose", "get_transform", "injection_text", "page", "transform",
]
