"""spaCy in the scoring processes runs without torch, and torch stays there for whoever needs it.

Each case runs in a fresh interpreter: what a process has loaded is the point.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.fresh_interpreter import printed_by

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        importlib.util.find_spec("torch") is None, reason="torch is not installed (the nli extra): nothing to keep out"
    ),
]


def test_the_scorers_spacy_pipeline_parses_without_torch_and_torch_still_imports_after() -> None:
    printed = printed_by("""
        import json, sys
        import scoring.consistency
        from scoring.consistency.runtime import load_nlp
        from scoring.settings import ConsistencySettings
        import thinc.compat

        doc = load_nlp(ConsistencySettings().spacy_model)("Paris is the capital of France.")
        before = {"torch": "torch" in sys.modules, "thinc_has_torch": thinc.compat.has_torch,
                  "entities": [(e.text, e.label_) for e in doc.ents]}
        import torch  # what the NLI judge does when it loads
        print(json.dumps({**before, "sum": float(torch.ones(3).sum())}))
    """)
    assert printed == {
        "torch": False,
        "thinc_has_torch": False,
        "entities": [["Paris", "GPE"], ["France", "GPE"]],
        "sum": 3.0,
    }


def test_thinc_loaded_before_is_left_as_it_is() -> None:
    printed = printed_by("""
        import json, sys
        import thinc.compat
        import scoring.consistency
        print(json.dumps(thinc.compat.has_torch))
    """)
    assert printed is True


def test_with_spacy_transformers_installed_thinc_keeps_torch(tmp_path: Path) -> None:
    """Its pipelines run on torch through thinc: a stand-in package is enough for the check that finds it."""
    (tmp_path / "spacy_transformers").mkdir()
    (tmp_path / "spacy_transformers" / "__init__.py").write_text("")
    printed = printed_by(f"""
        import json, sys
        sys.path.insert(0, {str(tmp_path)!r})
        import scoring.consistency
        import thinc.compat
        print(json.dumps(thinc.compat.has_torch))
    """)
    assert printed is True
