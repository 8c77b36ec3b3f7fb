"""Prompts live in versioned TOML files next to the code that uses them.

A prompt file `<package>/prompts/<name>.toml` holds `version = "..."` and one string per
prompt. Placeholders use `str.format` syntax (`{claim}`); literal braces are doubled.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from .errors import ConfigError


@dataclass(frozen=True)
class PromptSet:
    name: str
    version: str
    templates: dict[str, str]

    def render(self, key: str, **values: object) -> str:
        try:
            template = self.templates[key]
        except KeyError:
            raise ConfigError(f"Prompt set {self.name!r} has no prompt {key!r}") from None
        try:
            return template.format(**values)
        except KeyError as exc:
            raise ConfigError(f"Prompt {self.name}.{key} needs a value for {exc}") from None

    @property
    def ref(self) -> str:
        """What run logs record: name and version."""
        return f"{self.name}@{self.version}"


@lru_cache(maxsize=None)
def load_prompts(package: str, name: str) -> PromptSet:
    """Load `prompts/<name>.toml` from `package` (e.g. `misguard.claims`)."""
    try:
        raw = resources.files(package).joinpath("prompts", f"{name}.toml").read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"No prompt file prompts/{name}.toml in {package}") from None
    data = tomllib.loads(raw.decode("utf-8"))
    version = str(data.pop("version", "0"))
    return PromptSet(name=f"{package}:{name}", version=version, templates=data)
