"""Every link a real alert carries opens: the console link with the master key, the runbook link on the docs site.

The gateway (uvicorn, the console mounted) is configured as an operator copies addresses from a browser: its
``alerting.console_url`` and Prometheus's ``trustgate_console_url`` are the console's own address (``…/ui``,
``…/ui/``), not the gateway's. The docs site is built with MkDocs and served on loopback, and both the
gateway's ``alerting.runbooks_url`` and Prometheus's ``trustgate_runbooks_url`` name its runbooks page.

- The gateway's per-answer alert (``exporters.alertmanager``), as it posts it to an Alertmanager stand-in.
- Each alert of deploy/prometheus/rules, as a real Prometheus renders it: the shipped rules, each alert's
  condition replaced by one true at once (``for`` dropped), so that every alert fires within seconds with the
  shipped annotations rendered by Prometheus itself against its external labels.

A console link is followed as a browser does: the page (the console's shell) and then the fragment its script
fetches for that address with the key; a runbook link is the page and the section its fragment names.
"""

from __future__ import annotations

import functools
import html.parser
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import yaml
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import console
from exporters.alertmanager import ALERT_NAME
from proxy import create_app, server_options, settings_from_dict
from scoring import ComponentResult, Scorer, ScoringJob
from scoring.types import Ask
from tests.conftest import MASTER_KEY, gateway_config
from tests.deploy.prometheus_server import PROMETHEUS, RULES, PrometheusServer, shipped_config
from tests.docsite.build import build_site
from tests.fake_upstream import FakeUpstream
from tests.redis_server import free_port
from tests.servers import ServerThread

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (Debian package `prometheus`)"),
]

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}


class DoubtingScorer(Scorer):
    """Trust_BC of 0.1 for every answer: each is labelled untrusted, and alerted."""

    name = "bc"

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        return ComponentResult(component="bc", value=0.1, label="untrusted")


class Anchors(html.parser.HTMLParser):
    """The ids of a page's elements: the fragments a link into it can name."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids.update(value for name, value in attrs if name == "id" and value)


@pytest.fixture(scope="module")
def docs_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The docs site as ``make docs`` builds it, served on loopback; its runbooks page's URL."""
    site = tmp_path_factory.mktemp("site")
    built = build_site(site, strict=False)  # tests/docsite builds it strict: here only the runbooks matter
    assert built.returncode == 0, built.stdout + built.stderr
    quiet = type("Quiet", (SimpleHTTPRequestHandler,), {"log_message": lambda *args: None})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/runbooks/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def received_alerts() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An Alertmanager stand-in: its URL, and every alert posted to its v2 API."""
    received: list[dict[str, Any]] = []

    async def post(request: Request) -> Response:
        received.extend(await request.json())
        return Response(status_code=200)

    with ServerThread(Starlette(routes=[Route("/api/v2/alerts", post, methods=["POST"])])) as server:
        yield server.url, received


@pytest.fixture
def gateway(
    fake_upstream: FakeUpstream,
    docs_site: str,
    received_alerts: tuple[str, list[dict[str, Any]]],
    tmp_path: Path,
) -> Iterator[ServerThread]:
    """A gateway with the console, at an address chosen before it starts, as a config names it."""
    port = free_port()
    config = gateway_config(
        fake_upstream.url,  # type: ignore[attr-defined]
        trustgate={
            "store": {"path": str(tmp_path / "records.sqlite3")},
            "scoring": {"mode": "sync", "combine": "paper"},
            "alerting": {
                "alertmanager_url": received_alerts[0],
                "console_url": f"http://127.0.0.1:{port}/ui",
                "runbooks_url": docs_site,
                "backoff_s": 0.05,
            },
        },
    )
    settings = settings_from_dict(config, {})
    app = create_app(settings, registry=CollectorRegistry(), scorers=[DoubtingScorer()], mounts=[console.mount])
    server = ServerThread(app, port=port, **server_options(settings.trustgate.server)).start(timeout=60)
    try:
        yield server
    finally:
        server.stop()


def follow_console_link(link: str, gateway: ServerThread) -> str:
    """The console page at ``link`` and the fragment its script fetches for it with the master key (its text)."""
    parts = urlsplit(link)
    assert f"{parts.scheme}://{parts.netloc}" == gateway.url, link
    page = httpx.get(link, headers=AUTH, timeout=10)
    assert page.status_code == 200 and 'id="login"' in page.text, f"{link}: {page.status_code}"
    view = parts.path.removeprefix("/ui").strip("/") or "overview"
    fragment = httpx.get(f"{gateway.url}/ui/partials/{view}", params=parts.query, headers=AUTH, timeout=10)
    assert fragment.status_code == 200, f"{link}: the console answers {fragment.status_code}: {fragment.text}"
    return fragment.text


def follow_runbook_link(link: str, alert_name: str) -> None:
    """The runbooks page at ``link``, whose fragment is the alert's own section."""
    page = httpx.get(link, headers=AUTH, timeout=10)
    assert page.status_code == 200, f"{link}: {page.status_code}"
    anchors = Anchors()
    anchors.feed(page.text)
    fragment = urlsplit(link).fragment
    assert fragment == alert_name.lower() and fragment in anchors.ids, f"{link}: no section #{fragment}"


def test_the_gateways_alert_links_open(
    gateway: ServerThread, received_alerts: tuple[str, list[dict[str, Any]]]
) -> None:
    chat = {"model": "fake", "messages": [{"role": "user", "content": "What is the capital of France?"}]}
    response = httpx.post(f"{gateway.url}/v1/chat/completions", headers=AUTH, json=chat, timeout=30)
    assert response.headers["x-trust-label"] == "untrusted"
    record_id = response.headers["x-trust-id"]
    alerts = received_alerts[1]
    deadline = time.monotonic() + 10  # the push runs beside the response
    while not alerts and time.monotonic() < deadline:
        time.sleep(0.05)
    (alert,) = alerts
    assert alert["labels"] == {**alert["labels"], "alertname": ALERT_NAME, "trust_id": record_id}
    links = alert["annotations"]
    assert record_id in follow_console_link(links["console_url"], gateway)
    assert alert["generatorURL"] == links["console_url"]
    follow_runbook_link(links["runbook_url"], ALERT_NAME)


def firing_at_once(rules: dict[str, Any], model: str) -> dict[str, Any]:
    """The rules' alerts, each true at once for ``model`` on one gateway instance (annotations unchanged)."""
    instant = (
        'label_replace(label_replace(label_replace(vector(1), "model", "{m}", "", ""), '
        '"instance", "gw:4000", "", ""), "job", "trustgate-gateway", "", "")'
    )
    groups = []
    for group in rules["groups"]:
        alerts = [
            {**{k: v for k, v in rule.items() if k != "for"}, "expr": instant.format(m=model)}
            for rule in group["rules"]
            if "alert" in rule
        ]
        if alerts:
            groups.append({"name": group["name"], "rules": alerts})
    return {"groups": groups}


def test_every_rule_alerts_links_open(gateway: ServerThread, docs_site: str, tmp_path: Path) -> None:
    chat = {"model": "fake", "messages": [{"role": "user", "content": "What is the capital of France?"}]}
    httpx.post(f"{gateway.url}/v1/chat/completions", headers=AUTH, json=chat, timeout=30).raise_for_status()
    rules = yaml.safe_load(RULES.read_text())
    names = {rule["alert"] for group in rules["groups"] for rule in group["rules"] if "alert" in rule}
    firing = tmp_path / "firing.rules.yml"
    firing.write_text(yaml.safe_dump(firing_at_once(rules, "fake")))
    config = shipped_config({}, rule_files=[firing])
    config["global"]["external_labels"] = {
        "trustgate_console_url": f"{gateway.url}/ui/",
        "trustgate_runbooks_url": docs_site,
    }
    with PrometheusServer(tmp_path / "prometheus", config) as prometheus:
        alerts = prometheus.wait_until("ALERTS", lambda found: len(found) == len(names))
        rendered = {alert["labels"]["alertname"]: alert["annotations"] for alert in prometheus.alerts()}
    assert set(rendered) == names
    linked = 0
    for name, links in sorted(rendered.items()):
        follow_runbook_link(links["runbook_url"], name)
        if "console_url" in links:
            follow_console_link(links["console_url"], gateway)
            linked += 1
    assert linked >= 3 and alerts
