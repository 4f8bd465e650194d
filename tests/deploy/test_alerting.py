"""Per-answer alerts in the compose stack: the gateway's commented ``alerting`` section, once uncommented, points
at the Alertmanager service compose runs, and that Alertmanager routes the alert to a receiver (real amtool)."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from exporters.alertmanager import ALERT_NAME
from proxy.config.settings import settings_from_dict
from tests.deploy.promql import DEPLOY

ENV = {"TRUSTGATE_MASTER_KEY": "sk-test"}


def uncommented_alerting() -> dict[str, Any]:
    """config.compose.yaml with its ``# alerting:`` block uncommented, as its comment invites."""
    text = (DEPLOY / "config.compose.yaml").read_text()
    block = re.search(r"^  # alerting:\n(?:  #   .*\n)+", text, flags=re.MULTILINE)
    assert block is not None, "config.compose.yaml shows no commented alerting section"
    raw: dict[str, Any] = yaml.safe_load(
        text.replace(block.group(0), re.sub(r"^  # ", "  ", block.group(0), flags=re.MULTILINE))
    )
    return raw


@pytest.mark.unit
def test_the_compose_alerting_section_points_at_the_compose_alertmanager(compose: dict[str, Any]) -> None:
    alerting = settings_from_dict(uncommented_alerting(), environ=ENV).trustgate.alerting
    url = urlsplit(alerting.alertmanager_url or "")
    service = compose["services"]["alertmanager"]
    published = {port.rsplit(":", 1)[-1] for port in service["ports"]}
    assert url.hostname == "alertmanager" and str(url.port) in published
    gateway_port = compose["services"]["gateway"]["ports"][0].rsplit(":", 1)[-1]
    assert urlsplit(alerting.console_url).port == int(gateway_port)


@pytest.mark.integration
def test_the_compose_alertmanager_routes_a_low_trust_answer_to_a_receiver() -> None:
    amtool = shutil.which("amtool")
    if amtool is None:
        pytest.skip("amtool is not installed (Debian package `prometheus-alertmanager`; `make install` installs it)")
    labels = [f"alertname={ALERT_NAME}", "severity=warning", "model=cheap", "key=app", "action=blocked"]
    result = subprocess.run(
        [amtool, "config", "routes", "test", f"--config.file={DEPLOY / 'alertmanager' / 'alertmanager.yml'}", *labels],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split() == ["webhook"]
