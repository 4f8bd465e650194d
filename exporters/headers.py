"""Trust results as response headers and as the final SSE chunk of a stream."""

from __future__ import annotations

import time
from typing import Any

import orjson

from scoring.types import TrustRecord

__all__ = ["TRUST_EVENT", "sse_trust_chunk", "sse_trust_event", "trust_headers", "trust_summary"]

# The name of the trust event in a Responses API stream.
TRUST_EVENT = "trustgate.trust"


def _fmt(value: float | None) -> str | None:
    return None if value is None else f"{value:.4f}"


def _rag_headers(record: TrustRecord) -> dict[str, str | None]:
    rag = record.components.get("rag")
    if rag is None:
        return {}
    refusal = rag.details.get("refusal")
    return {"x-trust-citation-recall": _fmt(rag.details.get("citation_recall")),
            "x-trust-citation-precision": _fmt(rag.details.get("citation_precision")),
            "x-trust-refusal": None if refusal is None else str(bool(refusal)).lower()}


def trust_headers(record: TrustRecord) -> dict[str, str]:
    headers = {"x-trust-id": record.id, "x-trust-status": record.status}
    bc, fc = record.components.get("bc"), record.components.get("fc")
    values = {"x-trust-score": _fmt(record.score), "x-trust-bc": _fmt(bc.value if bc else None),
              "x-trust-fc": _fmt(fc.value if fc else None), "x-trust-label": record.label,
              "x-trust-probability": _fmt(record.probability), **_rag_headers(record)}
    headers.update({name: value for name, value in values.items() if value is not None})
    return headers


def trust_summary(record: TrustRecord) -> dict[str, Any]:
    """The compact form sent in-band: the full record is at GET /v1/trust/{id}."""
    return {"id": record.id, "status": record.status, "score": record.score, "label": record.label,
            "probability": record.probability,
            "components": {name: c.value for name, c in record.components.items()}}


def sse_trust_chunk(record: TrustRecord, *, completion_id: str, model: str,
                    object_type: str = "chat.completion.chunk") -> bytes:
    """A chunk with no choices and a ``trust`` object: OpenAI SDKs parse and keep it.

    ``object_type`` is ``text_completion`` in a legacy completions stream.
    """
    chunk = {"id": completion_id, "object": object_type, "created": int(time.time()),
             "model": model, "choices": [], "trust": trust_summary(record)}
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def sse_trust_event(record: TrustRecord, *, sequence_number: int) -> bytes:
    """A named event in a Responses API stream, sent before ``response.completed``.

    OpenAI SDKs pass event types they do not know through to the caller (and
    their stream accumulators skip them), so the trust object reaches code that
    looks for it without breaking code that does not.
    """
    event = {"type": TRUST_EVENT, "sequence_number": sequence_number, "trust": trust_summary(record)}
    return f"event: {TRUST_EVENT}\n".encode() + b"data: " + orjson.dumps(event) + b"\n\n"
