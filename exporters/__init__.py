"""Exporters: functions of what the gateway and scorers produce; they never compute scores."""

from .prometheus import GatewayMetrics, build_metrics

__all__ = ["GatewayMetrics", "build_metrics"]
