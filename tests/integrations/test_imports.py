"""misguard.integrations and its adapters import without any framework installed; using an
adapter then names the extra to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap

FRAMEWORKS = ["langgraph", "langchain", "langchain_core", "agents", "autogen_core", "autogen_agentchat",
              "autogen_ext", "networkx", "fastapi"]


def test_adapters_import_bare_and_name_their_extra():
    code = textwrap.dedent(
        f"""
        import sys, importlib.abc, importlib.metadata as md
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split('.')[0] in {FRAMEWORKS!r}:
                    raise ImportError('blocked ' + name)
        sys.meta_path.insert(0, Block())
        real = md.version
        def version(name):
            if name in ('langgraph', 'openai-agents', 'autogen-core'):
                raise md.PackageNotFoundError(name)
            return real(name)
        md.version = version
        from misguard.errors import MissingExtraError
        import misguard.integrations
        from misguard.integrations import langgraph, openai_agents, autogen
        for module, extra in ((langgraph, 'langgraph'), (openai_agents, 'openai-agents'), (autogen, 'autogen')):
            try:
                module.protect(object(), defense='none')
            except MissingExtraError as exc:
                assert f"misguard[{{extra}}]" in str(exc), exc
            else:
                raise SystemExit('expected MissingExtraError for ' + extra)
        print('ok', sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok []"
