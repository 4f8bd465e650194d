"""Trust_FC: retrieval-backed fact checking of answers (TrustScore §2.2, Appendix A.5.2).

What the gateway uses:

- ``scoring.factcheck.assets``: ``build_factcheck_assets(settings)`` at install
  time (idempotent; also ``python -m scoring.factcheck.assets``),
  ``load_evidence_index(settings)`` once at start (None: no evidence source),
  ``add_corpus(settings, path, name=...)`` and ``remove_corpus(settings, name)``
  for ``trustgate corpus add|remove``. It is not imported here, so that
  ``python -m`` runs it without importing it twice.
- ``scoring.factcheck.scorer.FactCheckScorer(index, settings.factcheck)``: the
  ``Scorer`` named "fc".

What is exported here loads no index library (bm25s): the RAG judge and the
gateway's RAG request handling import this package; the index and the scorer
are imported from their modules by what runs them (``scoring.assembly``).
"""

from .evidence import Evidence
from .judge import LABELS, Label, judge_prompt, label_probabilities, label_value, parse_judge_label
from .nli import NLIModelError
from .sources import CorpusError
from .text import evidence_query, tokenize

__all__ = [
    "LABELS",
    "CorpusError",
    "Evidence",
    "Label",
    "NLIModelError",
    "evidence_query",
    "judge_prompt",
    "label_probabilities",
    "label_value",
    "parse_judge_label",
    "tokenize",
]
