"""Grafana's low-trust panel and the trust alerts link into the console with filters the console accepts."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
import yaml

from exporters.record_query import RecordQuery

pytestmark = pytest.mark.unit

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def console_query(url: str) -> RecordQuery:
    parts = urlsplit(url)
    assert parts.path == "/ui/records"
    return RecordQuery.model_validate(dict(parse_qsl(parts.query)))


def test_the_low_trust_panel_links_to_that_models_untrusted_answers_in_the_window() -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "dashboards" / "trustgate.json").read_text())
    panel = next(p for p in dashboard["panels"] if p["title"] == "Low-trust rate by model")
    (link,) = panel["fieldConfig"]["defaults"]["links"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    # What Grafana substitutes: the variable, the series' model label, the time range in epoch milliseconds.
    url = (
        link["url"]
        .replace("${console_url}", variables["console_url"]["query"])
        .replace("${__field.labels.model:percentencode}", "gpt-4o%20mini")
        .replace("${__from}", "1763913600000")
        .replace("${__to}", "1763917200000")
    )
    query = console_query(url.removeprefix("http://localhost:4000"))
    assert (query.model, query.label) == ("gpt-4o mini", "untrusted")
    assert (query.since_s, query.until_s) == (1763913600.0, 1763917200.0)


def test_trust_alerts_carry_a_console_url() -> None:
    """The rendered URLs are checked by promtool's unit tests (tests/deploy/test_prometheus.py runs them)."""
    rules = yaml.safe_load((DEPLOY / "prometheus" / "rules" / "trustgate.rules.yml").read_text())
    alerts = {r["alert"]: r for g in rules["groups"] for r in g["rules"] if "alert" in r}
    for name, expected in (
        ("TrustGateLowTrustRateHigh", {"label": "untrusted"}),
        ("TrustGateScorerErrors", {"has_error": True}),
    ):
        template = alerts[name]["annotations"]["console_url"]
        base = '{{ reReplaceAll "(/ui)?/*$" "" $externalLabels.trustgate_console_url }}'  # the gateway's or /ui
        assert template.startswith(f"{base}/ui/records?"), name
        query = console_query(template.split("}}", 1)[1].replace("{{ $labels.model | urlquery }}", "a"))
        assert query.model == "a" and all(getattr(query, k) == v for k, v in expected.items())
    prometheus = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    assert prometheus["global"]["external_labels"]["trustgate_console_url"].startswith("http")
