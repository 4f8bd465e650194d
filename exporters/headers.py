"""Trust results as response headers and as the final SSE chunk of a stream."""

from __future__ import annotations

import time
from typing import Any

from scoring.types import RAGDetails, TrustRecord

__all__ = ["TRUST_EVENT", "trust_chunk", "trust_event", "trust_headers", "trust_summary"]

# The name of the trust event in a Responses API stream.
TRUST_EVENT = "trustgate.trust"


def _fmt(value: float | None) -> str | None:
    return None if value is None else f"{value:.4f}"


def _rag_headers(record: TrustRecord) -> dict[str, str | None]:
    rag = record.components.get("rag")
    if rag is None or not isinstance(rag.details, RAGDetails):
        return {}
    refusal = rag.details.refusal
    return {"x-trust-citation-recall": _fmt(rag.details.citation_recall),
            "x-trust-citation-precision": _fmt(rag.details.citation_precision),
            "x-trust-refusal": None if refusal is None else str(refusal).lower()}


def trust_headers(record: TrustRecord) -> dict[str, str]:
    headers = {"x-trust-id": record.id, "x-trust-status": record.status}
    bc, fc, lp, sc = (record.components.get(name) for name in ("bc", "fc", "lp", "sc"))
    values = {"x-trust-score": _fmt(record.score), "x-trust-bc": _fmt(bc.value if bc else None),
              "x-trust-fc": _fmt(fc.value if fc else None), "x-trust-lp": _fmt(lp.value if lp else None),
              "x-trust-sc": _fmt(sc.value if sc else None), "x-trust-label": record.label,
              "x-trust-probability": _fmt(record.probability), **_rag_headers(record)}
    headers.update({name: value for name, value in values.items() if value is not None})
    return headers


def trust_summary(record: TrustRecord) -> dict[str, Any]:
    """The compact form sent in-band: the full record is at GET /v1/trust/{id}."""
    return {"id": record.id, "status": record.status, "score": record.score, "label": record.label,
            "probability": record.probability,
            "components": {name: c.value for name, c in record.components.items()}}


def trust_chunk(record: TrustRecord, *, completion_id: str, model: str,
                object_type: str = "chat.completion.chunk") -> dict[str, Any]:
    """A chunk with no choices and a ``trust`` object: OpenAI SDKs parse and keep it.

    The gateway sends it as the stream's last event before ``data: [DONE]``;
    ``object_type`` is ``text_completion`` in a legacy completions stream.
    """
    return {"id": completion_id, "object": object_type, "created": int(time.time()),
            "model": model, "choices": [], "trust": trust_summary(record)}


def trust_event(record: TrustRecord, *, sequence_number: int) -> dict[str, Any]:
    """The ``TRUST_EVENT`` of a Responses API stream, sent before ``response.completed``.

    OpenAI SDKs pass event types they do not know through to the caller (and
    their stream accumulators skip them), so the trust object reaches code that
    looks for it without breaking code that does not.
    """
    return {"type": TRUST_EVENT, "sequence_number": sequence_number, "trust": trust_summary(record)}
