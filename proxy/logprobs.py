"""The answer's log-probabilities for the ``lp`` component, asked on the user's own call and hidden again.

Scoring the answer's token log-probabilities costs no extra upstream call only
if the user's call returns them. When the request is scored and the client did
not ask for them, the gateway adds ``logprobs: true`` upstream and takes the
``logprobs`` of every choice out of the response (non-streamed body and each
streamed event) before the client sees it, so the client gets what it asked
for. Both functions leave anything they cannot parse as it was: a body that is
not a chat completion carries no log-probabilities to hide.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["ask_for_logprobs", "strip_logprobs", "strip_logprobs_event"]


def ask_for_logprobs(body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """``body`` asking for log-probabilities, and whether the gateway added that (so must strip them)."""
    if body.get("logprobs") is True:
        return body, False
    return {**body, "logprobs": True}, True


def _without_logprobs(payload: Any) -> bool:
    """Set every choice's ``logprobs`` to null, as when none were asked; whether anything changed."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    changed = False
    for choice in choices if isinstance(choices, list) else ():
        if isinstance(choice, dict) and choice.get("logprobs") is not None:
            choice["logprobs"] = None
            changed = True
    return changed


def strip_logprobs(raw: bytes) -> bytes:
    """A non-streamed completion body without its choices' log-probabilities."""
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw
    return orjson.dumps(payload) if _without_logprobs(payload) else raw


def strip_logprobs_event(event: bytes) -> bytes:
    """One SSE event (its ``data:`` lines) without the choices' log-probabilities."""
    lines = event.split(b"\n")
    for number, line in enumerate(lines):
        if not line.startswith(b"data:") or line[5:].strip() == b"[DONE]":
            continue
        try:
            payload = orjson.loads(line[5:])
        except orjson.JSONDecodeError:
            continue
        if _without_logprobs(payload):
            lines[number] = b"data: " + orjson.dumps(payload)
    return b"\n".join(lines)
