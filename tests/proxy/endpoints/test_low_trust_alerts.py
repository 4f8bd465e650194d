"""Per-answer alerts: untrusted records and low-trust actions reach a real Alertmanager (its v2 API).

The test starts Debian's ``prometheus-alertmanager`` on a loopback port with a
temporary storage path and deploy/'s own config (the Alertmanager the compose
stack runs: its routing, grouping and receivers); with Alertmanager down,
requests are unaffected and the failed pushes are counted.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from exporters.alertmanager import ALERT_NAME, AlertmanagerExporter, AlertmanagerSettings, alert_for
from scoring.types import TrustRecord
from tests.fake_upstream import FakeUpstream
from tests.proxy.endpoints.low_trust import HIGH, LOW, VerdictScorer, ask_chat, config
from tests.redis_server import free_port
from tests.servers import ServerThread

BINARY = shutil.which("alertmanager") or shutil.which("prometheus-alertmanager")
DEPLOY_ALERTMANAGER = Path(__file__).resolve().parents[3] / "deploy" / "alertmanager" / "alertmanager.yml"


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[str]:
    if BINARY is None:
        pytest.skip("alertmanager is not installed (Debian package `prometheus-alertmanager`)")
    shutil.copy(DEPLOY_ALERTMANAGER, tmp_path / "am.yml")
    port = free_port()
    process = subprocess.Popen(
        [
            BINARY,
            f"--config.file={tmp_path / 'am.yml'}",
            f"--storage.path={tmp_path / 'am-data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "alertmanager did not start"
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def alerts(url: str, expected: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    while True:
        found = httpx.get(f"{url}/api/v2/alerts", timeout=5).json()
        if len(found) >= expected or time.monotonic() > deadline:
            return sorted(found, key=lambda alert: alert["labels"]["action"])
        time.sleep(0.1)


def metric(server: ServerThread, outcome: str) -> float:
    for line in httpx.get(f"{server.url}/metrics", timeout=5).text.splitlines():
        if line.startswith(f'trustgate_alert_pushes_total{{outcome="{outcome}"}}'):
            return float(line.split()[-1])
    return 0.0


def with_alerting(fake: FakeUpstream, **alerting: Any) -> dict[str, Any]:
    settings = config(
        fake.url,
        "passthrough",
        action="block",  # type: ignore[attr-defined]
        keys=[{"key": "sk-a", "name": "app"}],
    )
    settings["trustgate"]["alerting"] = {"console_url": "http://console.example", **alerting}
    return settings


@pytest.mark.integration
def test_a_blocked_answer_arrives_as_alerts_with_labels_and_a_console_link(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], alertmanager: str
) -> None:
    server = start_gateway(with_alerting(fake_upstream, alertmanager_url=alertmanager), scorers=[VerdictScorer()])
    blocked = ask_chat(server, LOW, key="sk-a")
    assert blocked.headers["x-trust-action"] == "blocked"
    assert ask_chat(server, HIGH, key="sk-a").status_code == 200  # trusted: no alert
    record_id = blocked.headers["x-trust-id"]
    found = alerts(alertmanager, 2)
    assert [alert["labels"] for alert in found] == [
        {
            "alertname": ALERT_NAME,
            "severity": "warning",
            "model": "cheap",
            "key": "app",
            "action": action,
            "trust_id": record_id,
        }
        for action in ("annotate", "blocked")
    ]
    for alert in found:
        assert alert["annotations"]["console_url"] == f"http://console.example/ui/records/{record_id}"
        assert "question" not in alert["annotations"] and "answer" not in alert["annotations"]
        assert LOW not in str(alert)
    assert metric(server, "sent") == 2 and metric(server, "failed") == 0


@pytest.mark.unit
def test_text_excerpts_only_when_asked() -> None:
    record = TrustRecord(
        id="trust-1",
        status="done",
        model="m",
        owner="k",
        score=0.1,
        label="untrusted",
        question="Q" * 50,
        answer="secret answer",
    )
    plain = alert_for(record, AlertmanagerSettings())
    assert plain is not None and "answer" not in plain["annotations"] and "secret" not in str(plain)
    with_text = alert_for(record, AlertmanagerSettings(include_text=True, excerpt_chars=20))
    assert with_text is not None
    assert with_text["annotations"]["answer"] == "secret answer"
    assert with_text["annotations"]["question"] == "Q" * 19 + "…"
    assert alert_for(record.model_copy(update={"label": "trusted"}), AlertmanagerSettings()) is None


@pytest.mark.integration
def test_alertmanager_down_leaves_requests_alone_and_counts_the_failures(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(
        with_alerting(
            fake_upstream, alertmanager_url=f"http://127.0.0.1:{free_port()}", max_attempts=2, backoff_s=0.05
        ),
        scorers=[VerdictScorer()],
    )
    blocked = ask_chat(server, LOW, key="sk-a")
    assert blocked.status_code == 200 and blocked.headers["x-trust-action"] == "blocked"
    deadline = time.monotonic() + 10
    while metric(server, "failed") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert metric(server, "failed") == 2 and metric(server, "sent") == 0


class FlakyAlertmanager:
    """An Alertmanager stand-in on a real socket for the retry rules: it answers ``statuses`` in turn, then 200,
    and counts the pushes it got."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses, self.pushes = list(statuses), 0

    def app(self) -> Starlette:
        async def alerts(request: Request) -> Response:
            await request.body()
            self.pushes += 1
            return Response(status_code=self.statuses.pop(0) if self.statuses else 200)

        return Starlette(routes=[Route("/api/v2/alerts", alerts, methods=["POST"])])


async def push_one(url: str, **settings: Any) -> dict[str, float]:
    """One untrusted record through the exporter; the outcomes counted once its push has ended."""
    registry = CollectorRegistry()
    pushes = Counter("pushes", "test", ["outcome"], registry=registry)
    record = TrustRecord(id="trust-1", status="done", model="m", owner="k", score=0.1, label="untrusted")
    async with httpx.AsyncClient() as client:
        exporter = AlertmanagerExporter(
            AlertmanagerSettings(alertmanager_url=url, backoff_s=0.01, **settings), client, pushes
        )
        exporter.notify(record)
        for _ in range(500):
            counted = {
                outcome: registry.get_sample_value("pushes_total", {"outcome": outcome}) or 0.0
                for outcome in ("sent", "failed")
            }
            if sum(counted.values()):
                return counted
            await asyncio.sleep(0.01)
    raise AssertionError("the push never ended")


@pytest.mark.integration
@pytest.mark.parametrize(
    ("statuses", "attempts", "pushes", "outcome"),
    [
        ([503, 429], 3, 3, "sent"),  # retried with backoff until it got through
        ([503, 503, 503, 503], 3, 3, "failed"),  # at most max_attempts, then counted
        ([400], 3, 1, "failed"),  # Alertmanager refused the alert itself: sending it again would not help
    ],
)
def test_a_push_is_retried_a_bounded_number_of_times(
    statuses: list[int], attempts: int, pushes: int, outcome: str
) -> None:
    flaky = FlakyAlertmanager(statuses)
    with ServerThread(flaky.app()) as server:
        counted = asyncio.run(push_one(server.url, max_attempts=attempts))
    assert counted[outcome] == 1 and sum(counted.values()) == 1
    assert flaky.pushes == pushes


@pytest.mark.integration
def test_pushes_beyond_max_pending_are_dropped_and_counted() -> None:
    async def flood(url: str) -> tuple[float, float]:
        registry = CollectorRegistry()
        pushes = Counter("pushes", "test", ["outcome"], registry=registry)
        async with httpx.AsyncClient() as client:
            exporter = AlertmanagerExporter(
                AlertmanagerSettings(alertmanager_url=url, max_pending=2, max_attempts=1, timeout_s=0.5), client, pushes
            )
            for number in range(5):  # the first two wait on an Alertmanager that never answers
                exporter.notify(
                    TrustRecord(id=f"trust-{number}", status="done", model="m", score=0.1, label="untrusted")
                )
            dropped = registry.get_sample_value("pushes_total", {"outcome": "dropped"}) or 0.0
            await exporter.close()
        return dropped, registry.get_sample_value("pushes_total", {"outcome": "sent"}) or 0.0

    with socket.socket() as silent:  # accepts connections (the kernel's backlog), never reads them
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        assert asyncio.run(flood(f"http://127.0.0.1:{silent.getsockname()[1]}")) == (3.0, 0.0)
