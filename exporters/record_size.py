"""A trust record's stored JSON, held under a byte bound by truncating its long texts.

Records carry user-sized text (the question, the answer, evidence passages,
the options a check showed): one 50 MB answer must not make a 50 MB row. Long
strings are cut with a visible marker, so a reader knows the text is partial
and by how much; the shortest cut that fits is used, the record's structure
(ids, scores, labels) is never touched.
"""

from __future__ import annotations

from typing import Any

import orjson

from scoring import Feedback, TrustRecord

__all__ = ["TRUNCATION_MARKER", "stored_json", "stored_record"]

TRUNCATION_MARKER = "…[truncated {} chars]"
# Below this a text says nothing any more; a record still too large then loses its components' details.
_MIN_TEXT_CHARS = 64
_BESIDE = {"feedback"}  # kept by the stores beside the record's JSON


def stored_record(record_json: str | bytes, feedback_json: str | bytes | None) -> TrustRecord:
    """A record read back from a store: its JSON, with the label kept beside it (None: unlabelled)."""
    record = TrustRecord.model_validate_json(record_json)
    if feedback_json:
        record.feedback = Feedback.model_validate_json(feedback_json)
    return record


def stored_json(record: TrustRecord, max_bytes: int) -> str:
    """The record as JSON, at most ``max_bytes`` long (texts truncated with TRUNCATION_MARKER when needed).

    Its feedback is left out: a store keeps the label beside the record (``set_feedback``), so that writing
    the record again never drops a label, and a label never counts against the record's bytes.
    """
    raw = record.model_dump_json(exclude=_BESIDE)
    if len(raw.encode()) <= max_bytes:
        return raw
    data = record.model_dump(mode="json", exclude=_BESIDE)
    limit = max(min(_longest_text(data) // 2, max_bytes), _MIN_TEXT_CHARS)
    while True:
        capped = orjson.dumps(_truncate(data, limit))
        if len(capped) <= max_bytes or limit == _MIN_TEXT_CHARS:
            break
        limit = max(limit // 2, _MIN_TEXT_CHARS)
    if len(capped) > max_bytes:  # many short texts, not a few long ones: keep the verdict, drop the evidence
        data = _truncate(data, _MIN_TEXT_CHARS)
        for component in data["components"].values():
            component["details"] = {"truncated": f"details dropped: the record exceeded {max_bytes} bytes"}
        capped = orjson.dumps(data)
    return capped.decode()


def _truncate(value: Any, limit: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + TRUNCATION_MARKER.format(len(value) - limit)
    if isinstance(value, dict):
        return {key: _truncate(item, limit) for key, item in value.items()}
    if isinstance(value, list):
        return [_truncate(item, limit) for item in value]
    return value


def _longest_text(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max((_longest_text(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return max((_longest_text(item) for item in value), default=0)
    return 0
