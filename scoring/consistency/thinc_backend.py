"""spaCy's backend, thinc, loaded without torch, which the consistency scorer's pipelines never use.

thinc imports torch at import whenever torch is installed (``thinc.compat``), to offer
PyTorch-backed layers. The gateway's spaCy pipelines are CPU pipelines that never use
them. torch is installed by the ``nli`` extra (which ``make install`` includes), only for
the opt-in NLI judge, and the judge imports it itself when it loads. Through thinc, torch
makes ``import spacy`` take 3.1–3.9 s and 272 MiB instead of 1.1–1.4 s and 91 MiB (three
runs each), in each of the default gateway's three scoring processes: the
local worker and its two CPU workers.

Importing this module loads thinc with torch refused for that one import, so that
``import spacy`` anywhere in ``scoring.consistency`` finds thinc already loaded. torch
stays importable afterwards: an NLI judge in the same process imports it as usual.
thinc is left alone when it is already loaded, and when spacy-transformers is installed,
whose pipelines do run on torch through thinc. The container image, which has no torch,
runs thinc exactly this way.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

__all__ = ["load_thinc_without_torch"]


class _TorchRefused(importlib.abc.MetaPathFinder):
    """Answers ``import torch`` (and its submodules) as if torch were not installed."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "torch" or fullname.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def load_thinc_without_torch() -> None:
    """Import ``thinc.compat`` with torch refused, unless thinc is loaded already or may need torch."""
    if "thinc.compat" in sys.modules or importlib.util.find_spec("spacy_transformers") is not None:
        return
    refused = _TorchRefused()
    sys.meta_path.insert(0, refused)
    try:
        importlib.import_module("thinc.compat")
    finally:
        sys.meta_path.remove(refused)


load_thinc_without_torch()
