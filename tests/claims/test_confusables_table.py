"""The shipped look-alike letters table is what tools/build_confusables.py builds from
Unicode's confusables: an edit by hand, or a changed override, fails here."""

from __future__ import annotations

import json
import runpy
from importlib import resources
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "build_confusables.py"


def test_the_shipped_table_is_the_built_one():
    built = runpy.run_path(str(TOOL))["build"]()
    shipped = json.loads(resources.files("misguard.claims").joinpath("data", "confusables.json").read_text(encoding="utf-8"))
    assert shipped == json.loads(json.dumps(built))
    # the letters the red-team suite's homoglyph transform uses are folded back
    assert shipped["to_latin"]["\u0430"] == "a" and shipped["to_latin"]["\u03bf"] == "o"
