"""What the deploy files may query: the gateway's exported series, and the metric
names, label matchers and grouping labels found in PromQL expressions.

The exported series are derived from ``exporters.prometheus.build_metrics`` and
``build_worker_metrics`` on a fresh registry, the way the text exposition names its samples: counters get
``_total``, histograms ``_bucket``/``_sum``/``_count``, gauges keep their name.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase

from exporters.prometheus import build_metrics, build_worker_metrics

__all__ = [
    "DEPLOY",
    "SCRAPE_LABELS",
    "exported_series",
    "grouping_labels",
    "labels_of",
    "load_yaml_docs",
    "metric_names",
    "selector_labels",
    "unknown_references",
]

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
# Labels Prometheus adds to every scraped series.
SCRAPE_LABELS = frozenset({"job", "instance"})
# Series Prometheus itself makes for every target, which alerts and panels may read too.
PROMETHEUS_SERIES = {"up": SCRAPE_LABELS}

_SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
    "gauge": ("",),
    "info": ("_info",),
}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_TRUSTGATE = re.compile(r"trustgate_[a-z_]+")
_SELECTOR = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}")
_MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")


def exported_series() -> dict[str, frozenset[str]]:
    """Every sample name the gateway and the workers expose (and ``up``), mapped to the labels it can carry."""
    metrics = build_metrics(CollectorRegistry())
    worker = build_worker_metrics(metrics.registry, metrics)
    label_names: dict[str, frozenset[str]] = {}
    for owner in (metrics, worker):
        for field in dataclasses.fields(owner):
            metric = getattr(owner, field.name)
            if isinstance(metric, MetricWrapperBase):
                # prometheus_client has no public accessor for a metric's label names.
                label_names[metric.describe()[0].name] = frozenset(metric._labelnames)
    series: dict[str, frozenset[str]] = dict(PROMETHEUS_SERIES)
    for family in metrics.registry.collect():
        labels = label_names.get(family.name, frozenset()) | SCRAPE_LABELS
        for suffix in _SUFFIXES.get(family.type, ("",)):
            series[family.name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
    return series


def _code(expr: str) -> str:
    """The expression with its string literals emptied (label values are not names)."""
    return _STRING.sub('""', expr)


def metric_names(expr: str) -> set[str]:
    """Metric names (``trustgate_*``, including recorded ``level:trustgate_…:op`` names, and ``up``) in a PromQL
    expression."""
    code = _code(expr)
    names = {token for token in _IDENTIFIER.findall(code) if "trustgate_" in token or token in PROMETHEUS_SERIES}
    # Every plain trustgate_[a-z_]+ match must belong to one of the names found.
    assert all(any(match in name for name in names) for match in _TRUSTGATE.findall(code))
    return names


def selector_labels(expr: str) -> dict[str, set[str]]:
    """For each ``name{...}`` selector, the label names its matchers use."""
    found: dict[str, set[str]] = {}
    for name, matchers in _SELECTOR.findall(_code(expr)):
        found.setdefault(name, set()).update(_MATCHER.findall(matchers))
    return found


def grouping_labels(expr: str) -> set[str]:
    """Labels named in ``by``/``without``/``on``/``ignoring``/``group_*`` clauses."""
    return {label.strip() for group in _GROUPING.findall(_code(expr)) for label in group.split(",") if label.strip()}


def labels_of(names: Iterable[str], known: Mapping[str, frozenset[str]]) -> frozenset[str]:
    return frozenset().union(*(known[name] for name in names if name in known))


def unknown_references(expr: str, known: Mapping[str, frozenset[str]]) -> list[str]:
    """Problems with one expression: unknown metrics, or labels its metrics do not carry."""
    problems = [f"metric {name} is not exported" for name in sorted(metric_names(expr) - set(known))]
    for name, labels in selector_labels(expr).items():
        if name in known:
            problems += [f"{name} has no label {label!r}" for label in sorted(labels - known[name])]
    available = labels_of(metric_names(expr), known)
    problems += [
        f"grouping label {label!r} is on none of {sorted(metric_names(expr))}"
        for label in sorted(grouping_labels(expr) - available)
    ]
    return problems


def load_yaml_docs(path: Path) -> list[Any]:
    """Every document of a (multi-document) YAML file."""
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
