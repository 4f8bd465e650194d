"""RAG trust (Trust-Eval): refusal groundedness, citation recall and precision, claim correctness.

What the gateway uses:

- ``prepare_rag_request(body) -> (forward_body, RagRequest | None)`` on every
  chat request, before the allowlist check: it removes the extension fields
  ``documents``, ``answerable`` and ``reference_claims`` (``RAG_FIELDS``),
  appends field-only documents to the prompt, and raises ``InvalidRagField``
  (``.param``) for a malformed one. None: closed-book, TrustScore applies.
- For a RAG request, the scoring job carries ``RagRequest.job_documents()``
  in ``documents`` and ``RagRequest.labels`` in ``policy.rag``
  (``scoring.types.JobPolicy``); its question comes from the client's own
  messages, not the forwarded ones, which may end with the appended passages.
- ``build_rag_scorer(settings)``: the ``Scorer`` named "rag" (``RagScorer``).

``trustgate eval rag`` scores a JSONL of cases (``cases.py``) and aggregates
them with ``rag_report``, Trust-Eval's offline report.
"""

from ..types import RagLabels
from .aggregate import rag_report
from .documents import Document, documents_in_messages, format_passages
from .request import RAG_FIELDS, InvalidRagField, RagRequest, prepare_rag_request
from .scorer import RagScorer, build_rag_scorer, trust_value

__all__ = [
    "RAG_FIELDS",
    "Document",
    "InvalidRagField",
    "RagLabels",
    "RagRequest",
    "RagScorer",
    "build_rag_scorer",
    "documents_in_messages",
    "format_passages",
    "prepare_rag_request",
    "rag_report",
    "trust_value",
]
