"""Fixtures shared by the deploy tests: the exported series and the parsed deploy files."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.promql import DEPLOY, exported_series, labels_of, metric_names
from tests.deploy.roles import ASSETS, Stack
from tests.fake_upstream import FakeUpstream
from tests.scripted_models import scripted

RULES = DEPLOY / "prometheus" / "rules" / "trustgate.rules.yml"
RULES_TEST = DEPLOY / "prometheus" / "rules" / "trustgate.rules.test.yml"


@pytest.fixture(scope="session")
def exported() -> dict[str, frozenset[str]]:
    return exported_series()


@pytest.fixture(scope="session")
def rules() -> dict[str, Any]:
    return yaml.safe_load(RULES.read_text())


@pytest.fixture(scope="session")
def recorded(rules: dict[str, Any], exported: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    """Series the recording rules create, with the labels of the metrics they are built from."""
    return {
        rule["record"]: labels_of(metric_names(rule["expr"]), exported)
        for group in rules["groups"]
        for rule in group["rules"]
        if "record" in rule
    }


@pytest.fixture(scope="session")
def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())


@pytest.fixture(scope="session")
def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool is not installed (Debian package `prometheus`; `make install` installs it)")
    return path


@pytest.fixture
def stack(tmp_path: Path, fake_upstream: FakeUpstream) -> Iterator[Stack]:
    """A directory laid out like the image, with the fake upstream standing in for the local-llm role."""
    fake_upstream.responder = scripted(consistent=True)
    running = Stack(tmp_path / "image", ASSETS)
    running.hosts["local-llm:8090"] = fake_upstream.url.removeprefix("http://")  # type: ignore[attr-defined]
    yield running
    running.stop()
