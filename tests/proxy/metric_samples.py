"""A gateway's Prometheus samples, read from its ``/metrics`` as a scraper reads them."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.servers import ServerThread


def metric(server: ServerThread, name: str, **labels: str) -> float:
    return samples(server).get((name, frozenset(labels.items())), 0.0)


def samples(server: ServerThread) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = httpx.get(f"{server.url}/metrics").text
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
