"""One registry pattern for every pluggable part (backends, attacks, defenses, metrics).

A factory is registered under a name with optional metadata; `build` records the
arguments it was called with (`build_record(obj)`) so a run log can rebuild the component.
A registry also discovers its plug-ins: modules named when it is created and installed
packages that declare an entry point in its group are imported on first lookup, so a
newly registered plug-in appears in the CLI, the benches and `doctor` without editing them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")

#: Attribute under which `Registry.build` leaves its `BuildRecord` on what it built.
BUILD_ATTR = "__misguard_build__"


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    factory: Callable[..., T]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BuildRecord:
    """How a component was built: registry kind, name and the arguments, JSON-able."""

    kind: str
    name: str
    args: list[Any]
    kwargs: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "args": self.args, "kwargs": self.kwargs}


def jsonable(value: Any) -> Any:
    """A JSON-able stand-in for a factory argument: pydantic models dump themselves,
    components that `describe()` themselves are described, the rest keep their repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    describe = getattr(value, "describe", None)
    if callable(describe):
        return jsonable(describe())
    return repr(value)


def build_record(obj: Any) -> BuildRecord | None:
    """The record `Registry.build` left on `obj`, if any."""
    return getattr(obj, BUILD_ATTR, None)


class Registry(Generic[T]):
    """Name -> factory, with metadata. `kind` appears in error messages.

    Args:
        kind: what the entries are, for messages ("defense").
        plugins: modules imported on first lookup because they register entries here
            (optional: a module that is not installed is skipped).
        entry_point_group: installed distributions may add modules to import under this
            entry-point group (e.g. `misguard.defenses`).
    """

    def __init__(self, kind: str, *, plugins: tuple[str, ...] = (), entry_point_group: str | None = None) -> None:
        self.kind = kind
        self.plugins = plugins
        self.entry_point_group = entry_point_group
        self._entries: dict[str, Entry[T]] = {}
        self._discovered = not plugins and entry_point_group is None

    def register(self, name: str, **metadata: Any) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def decorator(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._entries and self._entries[name].factory is not factory:
                raise ConfigError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = Entry(name, factory, dict(metadata))
            return factory

        return decorator

    def discover(self) -> None:
        """Import the plug-in modules once (idempotent)."""
        if self._discovered:
            return
        self._discovered = True  # first, so a plug-in that looks itself up does not recurse
        for module in self.plugins:
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:
                if exc.name != module:
                    raise
        if self.entry_point_group:
            for point in importlib.metadata.entry_points(group=self.entry_point_group):
                importlib.import_module(point.value.split(":")[0])

    def get(self, name: str) -> Entry[T]:
        self.discover()
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "none"
            raise ConfigError(f"Unknown {self.kind} {name!r}; known: {known}") from None

    def build(self, name: str, *args: Any, **kwargs: Any) -> T:
        """Call the factory; the arguments are recorded on the result (see `build_record`)
        when it accepts attributes."""
        built = self.get(name).factory(*args, **kwargs)
        record = BuildRecord(self.kind, name, jsonable(list(args)), jsonable(kwargs))
        try:
            setattr(built, BUILD_ATTR, record)
        except (AttributeError, TypeError):
            pass  # tuples, ints...: nothing to attach to; callers can `record_of` instead
        return built

    def record_of(self, name: str, *args: Any, **kwargs: Any) -> BuildRecord:
        """The record `build(name, *args, **kwargs)` would leave, without building."""
        return BuildRecord(self.kind, name, jsonable(list(args)), jsonable(kwargs))

    def names(self) -> list[str]:
        self.discover()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        self.discover()
        return name in self._entries

    def __iter__(self) -> Iterator[Entry[T]]:
        self.discover()
        return iter(list(self._entries.values()))
