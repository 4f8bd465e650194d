"""What ``sc`` needs to re-ask a request alike: its temperature, output cap and stop sequences. Pure.

Read from the body the client sent (already validated for its endpoint); a
field of an unexpected type is treated as not given, never as an error:
scoring must not fail the user's request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scoring import SamplingParams

__all__ = ["request_sampling"]

# Chat completions' names first, then the legacy one and the Responses API's.
_MAX_TOKENS = ("max_completion_tokens", "max_tokens", "max_output_tokens")
MAX_STOPS = 4  # OpenAI's own limit


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def request_sampling(body: Mapping[str, Any]) -> SamplingParams:
    temperature = _number(body.get("temperature"))
    max_tokens = next((int(v) for name in _MAX_TOKENS if (v := _number(body.get(name))) is not None and v >= 1), None)
    stop = body.get("stop")
    stops = (
        [stop] if isinstance(stop, str) else [s for s in stop if isinstance(s, str)] if isinstance(stop, list) else []
    )
    return SamplingParams(
        temperature=temperature if temperature is not None and 0 <= temperature <= 2 else None,
        max_tokens=max_tokens,
        stop=stops[:MAX_STOPS] or None,
    )
