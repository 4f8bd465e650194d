"""The docs site builds with ``mkdocs build --strict``, as ``make docs`` builds it: a broken link, a missing page
or anchor, a page left out of the nav, any warning fails. The built site holds the generated references."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
import yaml

from docsite.api_reference import openapi_schema
from docsite.config_reference import options
from tests.docsite.build import ROOT, build_site

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    built = build_site(out)
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def test_the_configuration_reference_lists_every_option(site: Path) -> None:
    page = (site / "configuration" / "reference" / "index.html").read_text()
    missing = [option.path for option in options() if f"<code>{html.escape(option.path)}</code>" not in page]
    assert missing == []


def test_the_api_reference_lists_every_route_and_serves_the_schema(site: Path) -> None:
    page = (site / "api" / "reference" / "index.html").read_text()
    schema = openapi_schema()
    assert [path for path in schema["paths"] if html.escape(path) not in page] == []
    assert json.loads((site / "api" / "openapi.json").read_text()) == schema


def test_the_readme_is_the_home_page_with_its_links_into_the_site(site: Path) -> None:
    home = (site / "index.html").read_text()
    assert "The two commands" in home and 'href="concepts/scores/"' in home
    assert 'src="console/overview.png"' in home


def test_the_readme_stays_a_front_door() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


def test_the_alerts_page_names_every_alert_rule() -> None:
    rules = yaml.safe_load((ROOT / "deploy" / "prometheus" / "rules" / "trustgate.rules.yml").read_text())
    alerts = [rule["alert"] for group in rules["groups"] for rule in group["rules"] if "alert" in rule]
    page = (ROOT / "docs" / "operations" / "alerts.md").read_text()
    assert alerts and [name for name in alerts if f"| `{name}` |" not in page] == []
