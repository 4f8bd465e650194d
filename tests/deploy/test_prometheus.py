"""The Prometheus config and rules, and the Alertmanager they send to: promtool and amtool
accept them, the rules' unit tests pass, every series they read is one the gateway or a
worker exports, and every alert links a runbook that exists."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporters.alertmanager import ALERT_NAME, DEFAULT_RUNBOOKS_URL
from tests.deploy.compose import host_path
from tests.deploy.conftest import RULES, RULES_TEST
from tests.deploy.promql import DEPLOY, labels_of, metric_names, unknown_references

PROMETHEUS_YML = DEPLOY / "prometheus" / "prometheus.yml"
ALERTMANAGER_YML = DEPLOY / "alertmanager" / "alertmanager.yml"
RUNBOOKS = DEPLOY.parent / "docs" / "runbooks.md"
ENV = {"TRUSTGATE_MASTER_KEY": "sk-test"}


def _promtool(promtool: str, *args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool, *map(str, args)], capture_output=True, text=True, timeout=60, cwd=cwd, check=False)


def _rules(rules: dict[str, Any]) -> list[dict[str, Any]]:
    return [rule for group in rules["groups"] for rule in group["rules"]]


def _alerts(rules: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {rule["alert"]: rule for rule in _rules(rules) if "alert" in rule}


@pytest.mark.integration
def test_promtool_check_rules(promtool: str) -> None:
    result = _promtool(promtool, "check", "rules", RULES)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.integration
def test_promtool_test_rules(promtool: str) -> None:
    result = _promtool(promtool, "test", "rules", RULES_TEST.name, cwd=RULES_TEST.parent)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.integration
def test_promtool_check_config_with_the_mounted_rules(promtool: str, compose: dict[str, Any], tmp_path: Path) -> None:
    """prometheus.yml is valid, and its rule_files (container paths) find the rules through the compose mounts."""
    config = yaml.safe_load(PROMETHEUS_YML.read_text())
    service = compose["services"]["prometheus"]
    local = []
    for pattern in config["rule_files"]:
        source = host_path(pattern, service, ENV)
        assert source is not None, f"rule_files {pattern} is not under a bind mount of the prometheus service"
        local.append(str((DEPLOY / source).resolve()))
    assert [p.name for pattern in local for p in sorted(Path(pattern).parent.glob(Path(pattern).name))] == [
        RULES.name
    ], "rule_files must load the rules file, and not its unit tests"
    config["rule_files"] = local
    copy = tmp_path / "prometheus.yml"
    copy.write_text(yaml.safe_dump(config))
    result = _promtool(promtool, "check", "config", copy)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.unit
def test_required_alerts_exist(rules: dict[str, Any]) -> None:
    alerts = _alerts(rules)
    read = {name: metric_names(rule["expr"]) for name, rule in alerts.items()}
    expanded = {
        name: set().union(*(metric_names(_recorded_expr(rules, m)) if ":" in m else {m} for m in metrics))
        for name, metrics in read.items()
    }
    needs = {
        "low-trust rate": {"trustgate_low_trust_responses_total", "trustgate_trust_labels_total"},
        "scoring backlog": {"trustgate_scoring_queue_depth"},
        "scorer errors": {"trustgate_scorer_errors_total"},
        "shed jobs": {"trustgate_scoring_shed_jobs_total"},
        "dead letters": {"trustgate_scoring_dead_letters_total"},
        "sync timeouts": {"trustgate_scoring_sync_timeouts_total", "trustgate_requests_total"},
        "errors and upstream errors": {"trustgate_requests_total"},
        "p99 latency": {"trustgate_request_duration_seconds_bucket"},
        "a target down": {"up"},
    }
    for what, metrics in needs.items():
        assert any(metrics <= used for used in expanded.values()), f"no alert on the {what} ({sorted(metrics)})"
    for name, rule in alerts.items():
        assert rule.get("for"), f"{name}: alerts must hold for a while before firing"
        assert rule["labels"]["severity"] in {"warning", "critical"}, name
        assert {"summary", "description", "runbook_url"} <= set(rule["annotations"]), name
    assert {
        "TrustGateScoringBacklogGrowing",
        "TrustGateUpstreamErrors",
        "TrustGateGatewayErrors",
        "TrustGateLatencyP99High",
        "TrustGateTargetDown",
        "TrustGateSyncTimeouts",
        "TrustGateScoringDeadLetters",
    } <= set(alerts)


def _anchor(heading: str) -> str:
    """The fragment a Markdown renderer (GitHub's rules) gives a heading."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-")


# An alert's runbook link: the runbooks page Prometheus's external label names (the published one without it).
RUNBOOK_BASE = f'{{{{ or $externalLabels.trustgate_runbooks_url "{DEFAULT_RUNBOOKS_URL}" }}}}'


@pytest.mark.unit
def test_every_alert_links_its_runbook_section(rules: dict[str, Any]) -> None:
    """The sections are the rules' alerts and the gateway's own per-answer alert (exporters.alertmanager)."""
    headings = re.findall(r"^## (.+)$", RUNBOOKS.read_text(), re.MULTILINE)
    anchors = {_anchor(h): h for h in headings}
    for name, rule in _alerts(rules).items():
        base, _, fragment = rule["annotations"]["runbook_url"].partition("#")
        assert base == RUNBOOK_BASE, name
        assert anchors.get(fragment) == name, f"{name}: runbook_url #{fragment} is not its section"
    assert set(anchors.values()) == {*_alerts(rules), ALERT_NAME}, "a runbook section without an alert, or the reverse"


@pytest.mark.unit
def test_the_shipped_prometheus_links_the_published_runbooks() -> None:
    """One default for the rules' links and the gateway's: the external label the shipped config sets."""
    labels = yaml.safe_load(PROMETHEUS_YML.read_text())["global"]["external_labels"]
    assert labels["trustgate_runbooks_url"] == DEFAULT_RUNBOOKS_URL


def _recorded_expr(rules: dict[str, Any], record: str) -> str:
    return next(rule["expr"] for rule in _rules(rules) if rule.get("record") == record)


@pytest.mark.unit
def test_rules_read_only_exported_series(
    rules: dict[str, Any], exported: dict[str, frozenset[str]], recorded: dict[str, frozenset[str]]
) -> None:
    known = {**exported, **recorded}
    problems = []
    for rule in _rules(rules):
        name = rule.get("record") or rule.get("alert")
        allowed = exported if "record" in rule else known  # recording rules build on raw series only
        problems += [f"{name}: {p}" for p in unknown_references(rule["expr"], allowed)]
        if "record" in rule:
            assert re.fullmatch(r"[a-z_]+:trustgate_[a-z0-9_]+:[a-z0-9_]+", rule["record"]), (
                f"{name}: recorded names follow level:metric:operations"
            )
    assert not problems, "\n".join(problems)


@pytest.mark.unit
def test_alert_annotations_use_labels_the_alert_has(
    rules: dict[str, Any], exported: dict[str, frozenset[str]], recorded: dict[str, frozenset[str]]
) -> None:
    known = {**exported, **recorded}
    for name, rule in _alerts(rules).items():
        available = labels_of(metric_names(rule["expr"]), known) | set(rule.get("labels", {}))
        for text in rule["annotations"].values():
            for label in re.findall(r"\$labels\.([A-Za-z_][A-Za-z0-9_]*)", text):
                assert label in available, f"{name} annotation uses {label}, not among {sorted(available)}"


@pytest.mark.unit
def test_every_alert_is_tested_firing_and_not_firing(rules: dict[str, Any]) -> None:
    cases = yaml.safe_load(RULES_TEST.read_text())
    assert cases["rule_files"] == [RULES.name]
    firing, silent = set(), set()
    for case in cases["tests"]:
        for check in case.get("alert_rule_test", []):
            (firing if check.get("exp_alerts") else silent).add(check["alertname"])
    for alert in _alerts(rules):
        assert alert in firing, f"{alert}: no test where it fires"
        assert alert in silent, f"{alert}: no test where it stays silent"


@pytest.mark.unit
@pytest.mark.parametrize(
    "job, service, port", [("trustgate-gateway", "gateway", 4000), ("trustgate-worker", "worker", 9400)]
)
def test_scrape_jobs_find_the_compose_services(compose: dict[str, Any], job: str, service: str, port: int) -> None:
    config = yaml.safe_load(PROMETHEUS_YML.read_text())
    scrape = next(s for s in config["scrape_configs"] if s["job_name"] == job)
    assert scrape.get("metrics_path", "/metrics") == "/metrics"
    sd = scrape["dns_sd_configs"][0]
    assert sd["names"] == [service] and sd["type"] == "A" and sd["port"] == port
    assert service in compose["services"]
    exposed = {str(p) for p in compose["services"][service].get("expose", [])}
    assert service == "gateway" or str(port) in exposed, f"{service} does not expose {port}"


@pytest.mark.unit
def test_prometheus_sends_alerts_to_the_compose_alertmanager(compose: dict[str, Any]) -> None:
    config = yaml.safe_load(PROMETHEUS_YML.read_text())
    (manager,) = config["alerting"]["alertmanagers"]
    (target,) = manager["static_configs"][0]["targets"]
    host, port = target.split(":")
    service = compose["services"][host]
    assert service["image"].startswith("prom/alertmanager:")
    assert f"127.0.0.1:{port}:{port}" in service["ports"]
    (config_flag,) = [arg for arg in service["command"] if arg.startswith("--config.file=")]
    source = host_path(config_flag.split("=", 1)[1], service, ENV)
    assert source is not None and (DEPLOY / source).resolve() == ALERTMANAGER_YML
    assert host in compose["services"]["prometheus"]["depends_on"]


@pytest.fixture(scope="module")
def amtool() -> str:
    path = shutil.which("amtool")
    if path is None:
        pytest.skip("amtool is not installed (Debian package `prometheus-alertmanager`; `make install` installs it)")
    return path


@pytest.mark.integration
def test_amtool_check_config(amtool: str) -> None:
    result = subprocess.run(
        [amtool, "check-config", str(ALERTMANAGER_YML)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.integration
def test_the_commented_slack_and_pagerduty_receivers_are_valid_too(amtool: str, tmp_path: Path) -> None:
    """Uncommenting the examples (as the file invites) must give a config Alertmanager accepts."""
    head, receivers = ALERTMANAGER_YML.read_text().split("\nreceivers:\n")
    uncommented = re.sub(r"^  # (?=- |  )", "  ", receivers, flags=re.MULTILINE)
    names = [receiver["name"] for receiver in yaml.safe_load("receivers:\n" + uncommented)["receivers"]]
    assert names == ["webhook", "slack", "pagerduty"]
    copy = tmp_path / "alertmanager.yml"
    copy.write_text(head + "\nreceivers:\n" + uncommented)
    result = subprocess.run(
        [amtool, "check-config", str(copy)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
