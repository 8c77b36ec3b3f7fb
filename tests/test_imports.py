"""The bare package imports without any extra; every public name imports."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import misguard

HEAVY = [
    "openai", "xllamacpp", "torch", "ray", "fastapi", "sentence_transformers", "sklearn",
    "trafilatura", "matplotlib", "sqlalchemy", "psycopg",
]
PACKAGES = [
    "misguard.llm", "misguard.embed", "misguard.claims", "misguard.memory", "misguard.mas",
    "misguard.attacks", "misguard.bench.claims", "misguard.bench.memory",
    "misguard.bench.misinfotask", "misguard.cli.main", "misguard.service", "misguard.bench.service",
    "misguard.net", "misguard.data", "misguard.attacks.transforms", "misguard.bench.redteam",
    "misguard.bench.crash",
]


def test_all_names_import():
    for name in misguard.__all__:
        assert getattr(misguard, name) is not None, name


def test_bare_import_without_extras():
    code = textwrap.dedent(
        f"""
        import sys, importlib.abc
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split('.')[0] in {HEAVY!r}:
                    raise ImportError('blocked ' + name)
        sys.meta_path.insert(0, Block())
        import importlib, misguard
        for name in {PACKAGES!r}:
            importlib.import_module(name)
        from misguard.errors import MissingExtraError
        from misguard.llm import get_llm
        try:
            get_llm('openai/gpt-4o-mini')
        except MissingExtraError as exc:
            assert "misguard[openai]" in str(exc), exc
        else:
            raise SystemExit('expected MissingExtraError')
        print('ok', sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok []"


def test_every_exported_name_exists():
    import importlib

    for name in PACKAGES:
        module = importlib.import_module(name)
        for exported in getattr(module, "__all__", []):
            assert hasattr(module, exported), f"{name}.{exported} is in __all__ but missing"


def test_cli_start_leaves_graph_and_model_libraries_unloaded():
    """Every `misguard` command imports the whole command tree; modules that only graph or
    model work needs stay unloaded until used (networkx alone added ~0.1-0.4 s to each start)."""
    code = "import sys, misguard.cli.main; print(sorted({m.split('.')[0] for m in sys.modules} & {'networkx', 'sklearn', 'torch', 'scipy'}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
