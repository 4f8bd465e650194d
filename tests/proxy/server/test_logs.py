"""The gateway's log as a collector reads it: one line per event, no colour codes, JSON on request
(--log-format json or TRUSTGATE_LOG_FORMAT), and the request id on every line written while serving
a request. The gateway runs as a real process; its litellm Router path serves the requests."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from proxy.base.request_ids import current_request_id
from tests.conftest import MASTER_KEY, gateway_config
from tests.e2e.gateway_process import REPO, GatewayProcess, free_port, serve_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.sampled_agreement import sc_config, scripted
from tests.proxy.scored_gateway import AUTH, AskingScorer, RaisingScorer, scoring_config
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

ROUTER_LOGGER = "LiteLLM Router"
ASKED_ID = "client-chosen-id.42"


@pytest.fixture
def litellm_config(tmp_path: Path, fake_upstream: FakeUpstream) -> Path:
    """The fake model through litellm's Router (no pass-through), scoring off."""
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {
        "server": {"port": free_port()},
        "store": {"path": str(tmp_path / "records.sqlite3")},
        "passthrough": False,
        "scoring": {"mode": "off"},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _ask(gateway: GatewayProcess, request_id: str | None) -> None:
    headers = {"authorization": f"Bearer {MASTER_KEY}", **({"x-request-id": request_id} if request_id else {})}
    reply = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        headers=headers,
        timeout=30,
        json={"model": "fake", "messages": [{"role": "user", "content": "hello"}]},
    )
    assert reply.status_code == 200, reply.text


def _served(config: Path, environ: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> list[str]:
    """Every line the gateway wrote (stdout and stderr), having answered one request with an id and one
    without, and then stopped."""
    with serve_config(config, environ=environ, args=args, timeout=120) as gateway:
        _ask(gateway, ASKED_ID)
        _ask(gateway, None)
    gateway.process.wait(30)
    return [line.rstrip("\n") for line in gateway.output]


@pytest.mark.parametrize(
    "chosen",
    [{"environ": {"TRUSTGATE_LOG_FORMAT": "json"}}, {"args": ("--log-format", "json")}],
    ids=["variable", "option"],
)
def test_json_logs_parse_line_by_line_and_carry_the_request_id(litellm_config: Path, chosen: Any) -> None:
    lines = _served(litellm_config, **chosen)
    events = [json.loads(line) for line in lines]  # every line, banner and uvicorn's included
    assert all({"time", "level", "logger", "message"} <= set(event) for event in events)
    asked = [e for e in events if e.get("request_id") == ASKED_ID]
    assert {e["logger"] for e in asked} >= {ROUTER_LOGGER, "uvicorn.access"}, asked
    others = {e["request_id"] for e in events if "request_id" in e} - {ASKED_ID}
    assert len(others) == 1, "the request without an id got one of its own"
    (other,) = others
    assert {e["logger"] for e in events if e.get("request_id") == other} >= {ROUTER_LOGGER, "uvicorn.access"}
    assert not any("request_id" in e for e in events if "Started server process" in e["message"]), (
        "a line outside any request carries no id"
    )
    assert any(e["logger"] == "trustgate" and e["message"].startswith("TrustGate is ready on") for e in events)


def test_each_litellm_line_appears_once_without_colour(litellm_config: Path) -> None:
    lines = _served(litellm_config)
    assert not any("\x1b" in line for line in lines), "ANSI escape codes in a log written to a pipe"
    router = [line for line in lines if f" {ROUTER_LOGGER}: litellm.acompletion" in line]
    assert len(router) == 2, "\n".join(lines)  # one Router line per request
    assert all(line[:4].isdigit() for line in lines if "LiteLLM" in line), "a LiteLLM message split over lines"
    assert Counter(router).most_common(1)[0][1] == 1
    assert sum(f"request_id={ASKED_ID}" in line for line in router) == 1


COLOURED = (
    "import logging; from proxy.base.log_format import configure_logging; configure_logging('text'); "
    "logging.getLogger('lib').info('\\x1b[32m 200 OK\\x1b[0m')"
)


def _stderr_of(code: str, terminal: bool) -> bytes:
    """What ``code`` writes on stderr when stderr is a terminal (a pseudo-terminal) or a pipe."""
    primary, secondary = os.openpty() if terminal else os.pipe()
    try:
        subprocess.run(
            [sys.executable, "-c", code],
            stderr=secondary,
            timeout=60,
            check=True,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        os.close(secondary)
        return os.read(primary, 65536)
    finally:
        os.close(primary)


def test_colour_reaches_a_terminal_only() -> None:
    assert b"\x1b[32m 200 OK\x1b[0m" in _stderr_of(COLOURED, terminal=True)
    piped = _stderr_of(COLOURED, terminal=False)
    assert b"INFO lib: 200 OK" in piped and b"\x1b" not in piped


class _RequestIdsSeen(logging.Handler):
    """Each line with the request id it was written under, as the log formatter reads it when it writes it."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record.getMessage(), current_request_id.get()))


def test_scoring_lines_carry_the_request_id_of_the_answer_they_score(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """Scoring runs in the queue's worker task, not the request's: its lines name the request all the same."""
    seen = _RequestIdsSeen()
    scoring_log = logging.getLogger("trustgate.scoring")
    scoring_log.addHandler(seen)
    try:
        server = start_gateway(
            scoring_config(fake_upstream.url, mode="sync"),  # type: ignore[attr-defined]
            scorers=[AskingScorer("bc", 0.9), RaisingScorer()],
        )
        reply = httpx.post(
            f"{server.url}/v1/chat/completions",
            headers={**AUTH, "x-request-id": ASKED_ID},
            json={"model": "fake", "messages": [{"role": "user", "content": "hello"}]},
            timeout=30,
        )
        assert reply.status_code == 200 and reply.headers["x-trust-status"] == "done", reply.text
    finally:
        scoring_log.removeHandler(seen)
    failed = [request_id for message, request_id in seen.seen if message.startswith("scorer fc failed")]
    assert failed == [ASKED_ID], seen.seen


def test_the_scoring_workers_lines_carry_the_request_id(tmp_path: Path, fake_upstream: FakeUpstream) -> None:
    """By default scoring runs in a child process (``scoring.worker: child``): its litellm lines for sc's
    re-asks name the request whose answer they score, as the gateway's line for the user's call does."""
    config = sc_config(fake_upstream.url, mode="sync")  # type: ignore[attr-defined]
    config["trustgate"].update(
        server={"port": free_port()}, store={"path": str(tmp_path / "records.sqlite3")}, passthrough=False
    )
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    fake_upstream.responder = scripted("Paris", ["Paris"])
    with serve_config(path, environ={"TRUSTGATE_LOG_FORMAT": "json"}, timeout=120) as gateway:
        reply = httpx.post(
            f"{gateway.url}/v1/chat/completions",
            timeout=60,
            headers={**AUTH, "x-trustgate-mode": "sync", "x-request-id": ASKED_ID},
            json={"model": "fake", "messages": [{"role": "user", "content": "Capital of France?"}]},
        )
        assert reply.status_code == 200 and reply.headers["x-trust-status"] == "done", reply.text
    gateway.process.wait(30)
    router = [
        event
        for event in map(json.loads, gateway.output)
        if event["logger"] == ROUTER_LOGGER and event["message"].startswith("litellm.acompletion")
    ]
    assert len(router) == 4, router  # the user's call, then sc's three re-asks in the worker
    assert [event.get("request_id") for event in router] == [ASKED_ID] * 4, router


FAILING = (
    "import logging; from proxy.base.log_format import configure_logging; configure_logging('text'); "
    "log = logging.getLogger('lib')\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n"
    "    log.exception('job j1 failed')\nlog.info('next event')"
)


def test_a_traceback_stays_on_its_events_line() -> None:
    """Text lines too are one per event: a logged exception's traceback does not spill onto lines of its own."""
    lines = _stderr_of(FAILING, terminal=False).decode().splitlines()
    assert len(lines) == 2, lines
    assert "ERROR lib: job j1 failed" in lines[0] and "Traceback (most recent call last):" in lines[0]
    assert lines[0].rstrip().endswith("ZeroDivisionError: division by zero") and "INFO lib: next event" in lines[1]
