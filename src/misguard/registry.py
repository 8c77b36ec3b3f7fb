"""One registry pattern for every pluggable part (backends, attacks, defenses, metrics).

A factory is registered under a name with optional metadata; `build` records the
arguments it was called with so a run log can rebuild the component.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    factory: Callable[..., T]
    metadata: dict[str, Any] = field(default_factory=dict)


class Registry(Generic[T]):
    """Name -> factory, with metadata. `kind` appears in error messages."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}

    def register(self, name: str, **metadata: Any) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def decorator(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._entries and self._entries[name].factory is not factory:
                raise ConfigError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = Entry(name, factory, dict(metadata))
            return factory

        return decorator

    def get(self, name: str) -> Entry[T]:
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "none"
            raise ConfigError(f"Unknown {self.kind} {name!r}; known: {known}") from None

    def build(self, name: str, *args: Any, **kwargs: Any) -> T:
        return self.get(name).factory(*args, **kwargs)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry[T]]:
        return iter(self._entries.values())
