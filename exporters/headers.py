"""Trust results as response headers and as the ``trust`` object a stream carries in-band."""

from __future__ import annotations

import time
from typing import Any

from scoring import RAGDetails, TrustRecord

__all__ = [
    "TRUST_EVENT",
    "TRUST_FIELD",
    "TRUST_HEADER_PREFIX",
    "trust_chunk",
    "trust_event",
    "trust_headers",
    "trust_summary",
]

# The names the gateway's trust data goes by — its own: an upstream's use of them is stripped
# (proxy.upstream.reserved).
# The trust event of a Responses API stream (sent only when the client asks for it).
TRUST_EVENT = "trustgate.trust"
# The field that carries a record's summary in-band: on a stream's final chunk, on the Responses
# stream's terminal response object, and in the trust event.
TRUST_FIELD = "trust"
TRUST_HEADER_PREFIX = "x-trust-"  # the response headers that carry it


def _fmt(value: float | None) -> str | None:
    return None if value is None else f"{value:.4f}"


def _rag_headers(record: TrustRecord) -> dict[str, str | None]:
    rag = record.components.get("rag")
    if rag is None or not isinstance(rag.details, RAGDetails):
        return {}
    refusal = rag.details.refusal
    return {
        "x-trust-citation-recall": _fmt(rag.details.citation_recall),
        "x-trust-citation-precision": _fmt(rag.details.citation_precision),
        "x-trust-refusal": None if refusal is None else str(refusal).lower(),
    }


def _grounds(record: TrustRecord) -> dict[str, str | None]:
    """What the score rests on: the components missing from it, its basis, what the model's labels say of it."""
    informative = record.informative
    return {
        "x-trust-missing": ",".join(sorted(record.missing)) or None,
        "x-trust-basis": record.basis,
        "x-trust-informative": None if informative is None else str(informative).lower(),
    }


def trust_headers(record: TrustRecord) -> dict[str, str]:
    headers = {"x-trust-id": record.id, "x-trust-status": record.status}
    bc, fc, lp, sc, ev = (record.components.get(name) for name in ("bc", "fc", "lp", "sc", "ev"))
    values = {
        "x-trust-kind": record.applicability.kind if record.applicability is not None else None,
        "x-trust-score": _fmt(record.score),
        "x-trust-bc": _fmt(bc.value if bc else None),
        "x-trust-fc": _fmt(fc.value if fc else None),
        "x-trust-lp": _fmt(lp.value if lp else None),
        "x-trust-sc": _fmt(sc.value if sc else None),
        "x-trust-ev": _fmt(ev.value if ev else None),
        "x-trust-label": record.label,
        "x-trust-probability": _fmt(record.probability),
        **_rag_headers(record),
        **_grounds(record),
    }
    headers.update({name: value for name, value in values.items() if value is not None})
    return headers


def _claims(record: TrustRecord) -> dict[str, Any]:
    """Each claim's span in the answer and its verdict, its own checks by value (their details are in the record)."""
    if not record.claims:
        return {}
    return {
        "claims": [
            {
                "text": claim.text,
                "start": claim.start,
                "end": claim.end,
                "score": claim.score,
                "label": claim.label,
                "components": {name: result.value for name, result in claim.components.items()},
            }
            for claim in record.claims
        ]
    }


def trust_summary(record: TrustRecord) -> dict[str, Any]:
    """The compact form sent in-band: the full record is at GET /v1/trust/{id}.

    ``applicability`` (kind and reason) where triage ran; ``basis``,
    ``missing`` and ``informative`` where scoring ran, as the headers carry them.
    """
    summary: dict[str, Any] = {
        "id": record.id,
        "status": record.status,
        "score": record.score,
        "label": record.label,
        "probability": record.probability,
        "components": {name: c.value for name, c in record.components.items()},
        **_claims(record),
    }
    if record.applicability is not None:
        summary["applicability"] = record.applicability.model_dump(mode="json")
    if record.basis is not None or record.missing:
        summary.update(basis=record.basis, missing=dict(record.missing), informative=record.informative)
    return summary


def trust_chunk(
    record: TrustRecord, *, completion_id: str, model: str, object_type: str = "chat.completion.chunk"
) -> dict[str, Any]:
    """A chunk carrying only the ``trust`` object, for a stream whose upstream sent no final chunk to carry it.

    Normally the trust object rides on the upstream's own final chunk (the one
    with ``finish_reason``). This one stands in when there is none, and has one
    empty choice (an empty delta; in a legacy completions stream, whose
    ``object_type`` is ``text_completion``, an empty text) so that the common
    client loop, ``chunk.choices[0].delta.content``, reads it as nothing.
    """
    choice: dict[str, Any] = (
        {"index": 0, "text": "", "logprobs": None, "finish_reason": None}
        if object_type == "text_completion"
        else {"index": 0, "delta": {}, "logprobs": None, "finish_reason": None}
    )
    return {
        "id": completion_id,
        "object": object_type,
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        TRUST_FIELD: trust_summary(record),
    }


def trust_event(record: TrustRecord, *, sequence_number: int) -> dict[str, Any]:
    """The ``TRUST_EVENT`` of a Responses API stream, sent before its terminal event when the client asks for it.

    Only on request (``x-trustgate-trust-event: true``): OpenAI SDKs type an
    event they do not know as whatever their union guesses (a
    ``ResponseAudioDeltaEvent``), so by default the trust object rides on the
    terminal event's response instead.
    """
    return {"type": TRUST_EVENT, "sequence_number": sequence_number, TRUST_FIELD: trust_summary(record)}
