"""Decide, per request, whether and how its answer is scored. Pure functions of settings and request facts."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .settings import ScoringMode, ScoringSettings

__all__ = ["Decision", "decide", "in_sample", "skip_reason"]

# Answers that decline to answer carry no claim to check (Trust-Eval's refusal phrasing, abridged).
_REFUSAL = re.compile(
    r"^\s*(i('m| am) (sorry|unable|not able)|i can(no|')t (help|answer|assist|provide)|"
    r"as an ai\b|i do not have (enough )?information|i don't know\b)", re.IGNORECASE)


@dataclass(frozen=True)
class Decision:
    mode: ScoringMode
    sync_timeout: float
    sampled: bool


def in_sample(request_key: str, rate: float) -> bool:
    """Deterministic per request: the same id is always in or always out at a given rate."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    bucket = int.from_bytes(hashlib.sha256(request_key.encode()).digest()[:8], "big") / 2**64
    return bucket < rate


def decide(settings: ScoringSettings, *, model: str, key_name: str, request_key: str,
           mode_header: str | None) -> Decision:
    """Mode and sampling: header > per-key > per-model > global default."""
    mode, rate, timeout = settings.mode, settings.sample_rate, settings.sync_timeout
    for override in (settings.per_model.get(model), settings.per_key.get(key_name)):
        if override is None:
            continue
        mode = override.mode or mode
        rate = override.sample_rate if override.sample_rate is not None else rate
        timeout = override.sync_timeout or timeout
    if mode_header is not None:
        mode = mode_header  # type: ignore[assignment]  # validated by the caller
    return Decision(mode=mode, sync_timeout=timeout, sampled=mode != "off" and in_sample(request_key, rate))


def skip_reason(answer: str | None, *, has_tool_calls: bool) -> str | None:
    """Why an answer has nothing to score, or None when it should be scored."""
    if has_tool_calls:
        return "tool_calls"
    if answer is None or not answer.strip():
        return "empty"
    if _REFUSAL.match(answer):
        return "refusal"
    return None
