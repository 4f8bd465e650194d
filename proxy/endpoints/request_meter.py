"""One request's outcome, counted and traced once: the request metric and the span end together.

Every endpoint handler and the stream that outlives it end a request the same
way — its model group (``unknown`` until the body named one), whether it
streamed, its final status and how long it took — so that one place holds it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from exporters import GatewayMetrics, RequestTrace

from ..base.sdk_params import Endpoint
from ..upstream.replies import TokenUsage

__all__ = ["RequestMeter"]

UNKNOWN = "unknown"  # the model group before the body named one, the key before one was recognised


@dataclass
class RequestMeter:
    metrics: GatewayMetrics
    traced: RequestTrace
    endpoint: Endpoint
    started: float = field(default_factory=time.perf_counter)
    model: str = UNKNOWN
    stream: bool = False
    key: str = UNKNOWN  # the key's configured name (bounded by the config), never the key
    _first_chunk_seen: bool = False

    def __post_init__(self) -> None:
        self.traced.endpoint(self.endpoint)
        self.traced.activate()

    def authenticated(self, key_name: str) -> None:
        self.key = key_name

    def named(self, model: str, stream: bool) -> None:
        """The request's model group is known (and whether it streams): its metric and span carry them."""
        self.model, self.stream = model, stream
        self.traced.named(model, stream)

    def answered_by(self, model: str) -> None:
        """A fallback group answered: the request's metric books it there (the span names the group asked)."""
        self.model = model

    def first_chunk(self) -> None:
        """A stream's first chunk went out: its time to first token, observed once."""
        if not self._first_chunk_seen:
            self._first_chunk_seen = True
            self.metrics.observe_first_token(
                model=self.model, endpoint=self.endpoint, seconds=time.perf_counter() - self.started
            )

    def used(self, usage: TokenUsage) -> None:
        """The tokens the upstream reported for this request, counted against its key."""
        self.metrics.observe_user_usage(
            model=self.model, key=self.key, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens
        )
        self.traced.usage(usage.prompt_tokens, usage.completion_tokens)

    def end(self, status: int, error: str | None = None) -> None:
        """Count the request with its final status and end its span (``error``: the code of a failure)."""
        self.metrics.observe_request(
            model=self.model,
            status=status,
            stream=self.stream,
            seconds=time.perf_counter() - self.started,
            endpoint=self.endpoint,
            key=self.key,
        )
        self.traced.end(status, error)
