"""The Grafana dashboard and its provisioning: valid JSON, a target on every panel,
only exported series, and provisioning paths that the compose mounts provide."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.deploy.compose import host_path, interpolate
from tests.deploy.promql import DEPLOY, labels_of, metric_names, unknown_references

pytestmark = pytest.mark.unit

DASHBOARD = DEPLOY / "grafana" / "dashboards" / "trustgate.json"
PROVISIONING = DEPLOY / "grafana" / "provisioning"
ENV = {"TRUSTGATE_MASTER_KEY": "sk-test"}

# What the dashboard must show (the panels an operator reads first), as the series each needs.
REQUIRED_SERIES = {
    "trust-score distribution": "trustgate_trust_score_bucket",
    "low-trust rate": "trustgate_low_trust_responses_total",
    "low-trust actions": "trustgate_trust_actions_total",
    "label mix": "trustgate_trust_labels_total",
    "scoring latency": "trustgate_scoring_duration_seconds_bucket",
    "queue depth": "trustgate_scoring_queue_depth",
    "shed jobs": "trustgate_scoring_shed_jobs_total",
    "scorer errors": "trustgate_scorer_errors_total",
    "scoring cost by purpose": "trustgate_upstream_calls_total",
    "scoring tokens": "trustgate_scoring_upstream_tokens_total",
    "share of spend on trust": "trustgate_spend_usd_total",
    "user tokens beside them": "trustgate_user_upstream_tokens_total",
    "request rate": "trustgate_requests_total",
    "upstream tries by deployment": "trustgate_upstream_tries_total",
    "fallbacks": "trustgate_fallbacks_total",
    "time to first token": "trustgate_time_to_first_token_seconds_bucket",
    "request latency": "trustgate_request_duration_seconds_bucket",
    "RAG metrics": "trustgate_rag_metric_bucket",
    "RAG refusals": "trustgate_rag_refusals_total",
    "dead letters": "trustgate_scoring_dead_letters_total",
    "sync timeouts": "trustgate_scoring_sync_timeouts_total",
    "worker jobs": "trustgate_worker_jobs_total",
    "worker jobs in flight": "trustgate_worker_jobs_in_flight",
    "worker job duration": "trustgate_worker_job_duration_seconds_bucket",
    "reclaimed jobs": "trustgate_worker_jobs_reclaimed_total",
    "targets up": "up",
}


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


@pytest.fixture(scope="module")
def datasource() -> dict[str, Any]:
    config = yaml.safe_load((PROVISIONING / "datasources" / "prometheus.yml").read_text())
    assert config["apiVersion"] == 1
    (source,) = config["datasources"]
    return source


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def _queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable."""
    for panel in _panels(dashboard["panels"]):
        for target in panel.get("targets", []):
            yield f"panel {panel['title']!r} target {target.get('refId')}", target.get("expr", "")
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            yield f"variable {variable['name']}", query["query"] if isinstance(query, dict) else query


def test_dashboard_shape(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] and dashboard["title"] and isinstance(dashboard["schemaVersion"], int)
    ids = [p["id"] for p in _panels(dashboard["panels"])]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in _panels(dashboard["panels"]):
        assert {"h", "w", "x", "y"} <= set(panel["gridPos"]), panel["title"]
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24, panel["title"]


def test_every_panel_has_a_target(dashboard: dict[str, Any]) -> None:
    for panel in _panels(dashboard["panels"]):
        if panel["type"] == "row":
            continue
        assert panel.get("targets"), f"panel {panel['title']!r} has no target"
        for target in panel["targets"]:
            assert target.get("expr", "").strip(), f"panel {panel['title']!r} has an empty target"


DATASOURCE_INPUT = "DS_PROMETHEUS"


def test_the_datasource_is_a_variable_as_in_shared_dashboards(dashboard: dict[str, Any]) -> None:
    """grafana.com's convention: an import asks for the Prometheus to use (``__inputs``), and a provisioned
    copy chooses it from a datasource variable of the same name (the default datasource until changed)."""
    (wanted,) = dashboard["__inputs"]
    assert wanted == {**wanted, "name": DATASOURCE_INPUT, "type": "datasource", "pluginId": "prometheus"}
    assert {"type": "datasource", "id": "prometheus"}.items() <= dashboard["__requires"][0].items()
    (variable,) = [v for v in dashboard["templating"]["list"] if v["type"] == "datasource"]
    assert (variable["name"], variable["query"]) == (DATASOURCE_INPUT, "prometheus")
    owners = [
        (panel["title"], owner)
        for panel in _panels(dashboard["panels"])
        for owner in [panel, *panel.get("targets", [])]
        if "datasource" in owner
    ]
    owners += [(v["name"], v) for v in dashboard["templating"]["list"] if "datasource" in v]
    targets = [t for panel in _panels(dashboard["panels"]) for t in panel.get("targets", [])]
    assert all("datasource" in target for target in targets), "a target on Grafana's default datasource"
    for where, owner in owners:
        assert owner["datasource"] == {"type": "prometheus", "uid": f"${{{DATASOURCE_INPUT}}}"}, where
    assert '"uid": "prometheus"' not in DASHBOARD.read_text(), "a hard-coded datasource uid"


def test_provisioning_makes_its_prometheus_the_default(datasource: dict[str, Any]) -> None:
    """The datasource variable of a provisioned dashboard starts on the default datasource."""
    assert datasource["type"] == "prometheus" and datasource["isDefault"] is True


def test_traffic_is_shown_by_key_and_by_endpoint(dashboard: dict[str, Any]) -> None:
    """An operator attributes traffic and spend to a key (team) and an endpoint."""
    grouped = [
        set(re.findall(r"sum by \(([^)]*)\)", expr)[0].replace(" ", "").split(","))
        for _, expr in _queries(dashboard)
        if "sum by (" in expr
    ]
    assert any("key" in labels for labels in grouped) and any("endpoint" in labels for labels in grouped)
    assert "key" in {v["name"] for v in dashboard["templating"]["list"]}


def test_dashboard_queries_only_exported_series(dashboard: dict[str, Any], exported: dict[str, frozenset[str]]) -> None:
    problems = [
        f"{where}: {problem}" for where, expr in _queries(dashboard) for problem in unknown_references(expr, exported)
    ]
    assert not problems, "\n".join(problems)


def test_dashboard_shows_every_required_series(dashboard: dict[str, Any]) -> None:
    used = set().union(*(metric_names(expr) for _, expr in _queries(dashboard)))
    missing = {what: series for what, series in REQUIRED_SERIES.items() if series not in used}
    assert not missing, f"no panel for {missing}"


def test_trust_score_panels_cover_each_component(dashboard: dict[str, Any]) -> None:
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert set(variables["component"]["query"].split(",")) == {"bc", "fc", "ov"}
    heatmaps = [p for p in _panels(dashboard["panels"]) if p["type"] == "heatmap"]
    assert heatmaps and all(p.get("repeat") == "component" for p in heatmaps)
    for panel in heatmaps:
        for target in panel["targets"]:
            assert "trustgate_trust_score_bucket" in target["expr"] and target.get("format") == "heatmap"


def test_model_variable_filters_every_model_labelled_query(
    dashboard: dict[str, Any], exported: dict[str, frozenset[str]]
) -> None:
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    model = variables["model"]
    assert model["type"] == "query" and model["multi"] and model["includeAll"]
    query = model["query"]["query"]
    match = re.fullmatch(r"label_values\((trustgate_[a-z_]+),\s*model\)", query)
    assert match and "model" in exported[match.group(1)], query
    for where, expr in _queries(dashboard):
        if where.startswith("panel") and "model" in labels_of(metric_names(expr), exported):
            for selector in re.findall(r"trustgate_[a-z_]+(\{[^}]*\})?", expr):
                assert 'model=~"$model"' in selector, f"{where}: not filtered by $model: {expr}"


def test_legends_name_labels_the_queries_have(dashboard: dict[str, Any], exported: dict[str, frozenset[str]]) -> None:
    for panel in _panels(dashboard["panels"]):
        for target in panel.get("targets", []):
            available = labels_of(metric_names(target["expr"]), exported)
            for label in re.findall(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", target.get("legendFormat", "")):
                assert label in available, f"panel {panel['title']!r}: legend uses {label}"


def test_provisioning_points_at_mounted_paths(compose: dict[str, Any], datasource: dict[str, Any]) -> None:
    grafana = compose["services"]["grafana"]
    assert host_path("/etc/grafana/provisioning/datasources", grafana, ENV) == "grafana/provisioning/datasources"
    assert host_path("/etc/grafana/provisioning/dashboards", grafana, ENV) == "grafana/provisioning/dashboards"
    providers = yaml.safe_load((PROVISIONING / "dashboards" / "dashboards.yml").read_text())
    assert providers["apiVersion"] == 1
    for provider in providers["providers"]:
        assert provider["type"] == "file"
        source = host_path(provider["options"]["path"], grafana, ENV)
        assert source is not None, f"dashboard path {provider['options']['path']} is not mounted into grafana"
        assert (DEPLOY / source / DASHBOARD.name).is_file()
    home = interpolate(grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"], ENV)
    assert DEPLOY / str(host_path(home, grafana, ENV)) == DASHBOARD
    # The datasource URL names the compose prometheus service on its port.
    assert datasource["type"] == "prometheus"
    assert re.fullmatch(r"http://prometheus:9090/?", datasource["url"])
    assert "prometheus" in compose["services"]
