"""One request's outcome, counted and traced once: the request metric and the span end together.

Every endpoint handler and the stream that outlives it end a request the same
way — its model group (``unknown`` until the body named one), whether it
streamed, its final status and how long it took — so that one place holds it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from exporters import GatewayMetrics, RequestTrace

__all__ = ["RequestMeter"]


@dataclass
class RequestMeter:
    metrics: GatewayMetrics
    traced: RequestTrace
    started: float = field(default_factory=time.perf_counter)
    model: str = "unknown"
    stream: bool = False

    def named(self, model: str, stream: bool) -> None:
        """The request's model group is known (and whether it streams): its metric and span carry them."""
        self.model, self.stream = model, stream
        self.traced.named(model, stream)

    def answered_by(self, model: str) -> None:
        """A fallback group answered: the request's metric books it there (the span names the group asked)."""
        self.model = model

    def end(self, status: int, error: str | None = None) -> None:
        """Count the request with its final status and end its span (``error``: the code of a failure)."""
        self.metrics.observe_request(model=self.model, status=status, stream=self.stream,
                                     seconds=time.perf_counter() - self.started)
        self.traced.end(status, error)
