"""Every Prometheus metric the gateway exports, built on a registry passed in.

Labels are bounded: model group and HTTP status class, never user ids or keys.
LLM latencies routinely exceed the default buckets' 10 s ceiling, hence the
explicit buckets.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["GatewayMetrics", "LATENCY_BUCKETS", "build_metrics"]

NAMESPACE = "trustgate"
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300)


@dataclass(frozen=True)
class GatewayMetrics:
    registry: CollectorRegistry
    requests: Counter
    request_duration: Histogram

    def observe_request(self, *, model: str, status: int, stream: bool, seconds: float) -> None:
        mode = "stream" if stream else "unary"
        self.requests.labels(model=model, status=str(status), mode=mode).inc()
        self.request_duration.labels(model=model, mode=mode).observe(seconds)


def build_metrics(registry: CollectorRegistry) -> GatewayMetrics:
    return GatewayMetrics(
        registry=registry,
        requests=Counter(
            "requests", "Chat completion requests handled by the gateway, by final status.",
            ["model", "status", "mode"], namespace=NAMESPACE, registry=registry),
        request_duration=Histogram(
            "request_duration", "Time from request received to last byte sent.",
            ["model", "mode"], namespace=NAMESPACE, unit="seconds", buckets=LATENCY_BUCKETS,
            registry=registry),
    )
