"""Every panel of the shipped Grafana dashboard has data on a healthy gateway, from its first minutes.

A real gateway (uvicorn, its configured scorers in its local scoring worker, the fake upstream playing the
model) answers a short burst of traffic; a real Prometheus scrapes it with deploy/'s config; every expression
of every panel is then evaluated through Prometheus's HTTP API over the test's time range, as Grafana would,
with the dashboard's variables at "All". An expression with no number in its result fails the test unless its
panel's description says it needs a Redis worker or RAG traffic, which this gateway has none of.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import MASTER_KEY, gateway_config
from tests.deploy.prometheus_server import PROMETHEUS, PrometheusServer, has_data, shipped_config
from tests.deploy.promql import DEPLOY
from tests.deploy.roles import ASSETS, assets_built
from tests.fake_upstream import FakeUpstream
from tests.scripted_models import scripted
from tests.servers import ServerThread

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (Debian package `prometheus`)"),
    pytest.mark.skipif(not assets_built(), reason="scoring assets not built: `make install` builds them"),
]

DASHBOARD = DEPLOY / "grafana" / "dashboards" / "trustgate.json"
# What a panel's description says when only a part this gateway does not run can feed it.
EXCUSES = ("Needs a Redis worker", "Needs RAG traffic")
# Grafana's $__rate_interval for a 1 s scrape is 4 s; a wider window keeps a burst in view between scrapes.
RATE_INTERVAL = "15s"
KEYS = [{"key": "sk-team-a", "name": "team-a"}]


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def _all_value(variable: dict[str, Any]) -> str:
    """What Grafana puts for a multi-value variable at "All" in a regex matcher."""
    if variable.get("allValue"):
        return str(variable["allValue"])
    values = [option["value"] for option in variable.get("options", []) if option["value"] != "$__all"]
    return "(" + "|".join(values) + ")"


def _substitute(expr: str, values: dict[str, str]) -> str:
    return re.sub(r"\$(\w+)", lambda m: values.get(m.group(1), m.group(0)), expr)


def panel_queries(dashboard: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str]]:
    """(panel, PromQL) for every target, variables substituted; a repeated panel once per value it repeats for."""
    variables = {v["name"]: v for v in dashboard["templating"]["list"] if v["type"] in ("query", "custom")}
    for panel in _panels(dashboard["panels"]):
        repeats = variables[panel["repeat"]] if "repeat" in panel else None
        copies = (
            [{repeats["name"]: o["value"]} for o in repeats["options"] if o["value"] != "$__all"] if repeats else [{}]
        )
        for chosen in copies:
            values = {name: chosen.get(name, _all_value(variable)) for name, variable in variables.items()}
            values["__rate_interval"] = RATE_INTERVAL
            for target in panel.get("targets", []):
                expr = _substitute(target["expr"], values)
                assert "$" not in expr, f"panel {panel['title']!r}: a variable left in {expr}"
                yield panel, expr


@pytest.fixture
def healthy_gateway(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> ServerThread:
    """Two model groups (one the other's fallback), a named key beside the master key, scoring in sync mode by
    the configured scorers."""
    fake_upstream.responder = scripted(consistent=True)
    config = gateway_config(
        fake_upstream.url,  # type: ignore[attr-defined]
        trustgate={
            "keys": KEYS,
            "scoring": {
                "data_dir": str(ASSETS),
                "mode": "sync",
                "combine": "paper",
                "consistency": {"max_checks": 2, "seed": 7},
            },
        },
    )
    backup = json.loads(json.dumps(config["model_list"][0]))
    backup["model_name"] = "backup"
    config["model_list"].append(backup)
    config["router_settings"]["fallbacks"] = [{"fake": ["backup"]}]
    return start_gateway(config, scorers=None)


def burst(server: ServerThread) -> int:
    """A few requests of each kind a healthy gateway serves: unary and streamed, every endpoint, two keys.
    Returns how many were sent."""
    chat = {"model": "fake", "messages": [{"role": "user", "content": "What is the capital of France?"}]}
    requests = [
        ("/v1/chat/completions", MASTER_KEY, chat),
        ("/v1/chat/completions", "sk-team-a", chat),
        ("/v1/chat/completions", "sk-team-a", {**chat, "stream": True, "stream_options": {"include_usage": True}}),
        ("/v1/chat/completions", MASTER_KEY, {**chat, "model": "backup"}),
        ("/v1/completions", "sk-team-a", {"model": "fake", "prompt": "The capital of France is"}),
        ("/v1/embeddings", "sk-team-a", {"model": "fake", "input": "Paris"}),
    ]
    for path, key, body in requests:
        response = httpx.post(f"{server.url}{path}", headers={"authorization": f"Bearer {key}"}, json=body, timeout=120)
        assert response.status_code == 200, response.text
    return len(requests)


def test_every_panel_has_data_after_a_short_burst(healthy_gateway: ServerThread, tmp_path: Path) -> None:
    target = healthy_gateway.url.removeprefix("http://")
    config = shipped_config({"trustgate-gateway": target})
    with PrometheusServer(tmp_path / "prometheus", config) as prometheus:
        started = time.time()
        prometheus.wait_until('up{job="trustgate-gateway"} == 1', bool)
        sent = burst(healthy_gateway)
        # Every request scraped, and two scrapes more, so that each rate() has the burst inside its window.
        prometheus.wait_until(f"sum(trustgate_requests_total) >= {sent}", bool)
        time.sleep(2.5)
        dashboard = json.loads(DASHBOARD.read_text())
        empty = [
            f"{panel['title']!r}: {expr}"
            for panel, expr in panel_queries(dashboard)
            if not any(excuse in panel.get("description", "") for excuse in EXCUSES)
            and not has_data(prometheus.query_range(expr, started, time.time()))
        ]
    assert not empty, "panels with no data on a healthy gateway:\n" + "\n".join(empty)
