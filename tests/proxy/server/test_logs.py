"""The gateway's log as a collector reads it: one line per event on either upstream path (litellm's lines
in the gateway's format and level), no colour codes, JSON on request (--log-format json or
TRUSTGATE_LOG_FORMAT), and the request id on every line written while serving a request. The gateway runs
as a real process; its litellm Router path serves the requests."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
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
from tests.proxy.sampled_agreement import sc_config
from tests.proxy.scored_gateway import AUTH, AskingScorer, RaisingScorer, scoring_config, wait_for_record
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

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


def _ask(gateway: GatewayProcess, request_id: str | None, content: str = "hello", status: int = 200) -> None:
    headers = {"authorization": f"Bearer {MASTER_KEY}", **({"x-request-id": request_id} if request_id else {})}
    reply = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        headers=headers,
        timeout=30,
        json={"model": "fake", "messages": [{"role": "user", "content": content}]},
    )
    assert reply.status_code == status, reply.text


def _served(config: Path, environ: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> list[str]:
    """Every line the gateway wrote (stdout and stderr), having answered one request with an id (its upstream
    failing, so that it writes more than its access line) and one without, and then stopped."""
    with serve_config(config, environ=environ, args=args, timeout=120) as gateway:
        _ask(gateway, ASKED_ID, "hello [fail:500]", 500)
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
    assert {e["logger"] for e in asked} == {"trustgate.upstream", "uvicorn.access"}, asked
    others = {e["request_id"] for e in events if "request_id" in e} - {ASKED_ID}
    assert len(others) == 1, "the request without an id got one of its own"
    (other,) = others
    assert {e["logger"] for e in events if e.get("request_id") == other} == {"uvicorn.access"}
    assert not any("request_id" in e for e in events if "Started server process" in e["message"]), (
        "a line outside any request carries no id"
    )
    assert any(e["logger"] == "trustgate" and e["message"].startswith("TrustGate is ready on") for e in events)


TRAFFIC: list[tuple[str, dict[str, Any]]] = [
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hello"}]}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hello"}], "stream": True}),
    ("/v1/completions", {"prompt": "hello"}),
    ("/v1/completions", {"prompt": "hello", "stream": True}),
    ("/v1/responses", {"input": "hello"}),
    ("/v1/responses", {"input": "hello", "stream": True}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hello [fail:500]"}]}),
]


def _events_logged(tmp_path: Path, upstream: str, path: str) -> list[str]:
    """The lines a gateway on ``path`` writes for ``TRAFFIC``, each answer scored by sc (two re-asks in the
    scoring worker), from its ready line on: each line's logger and message."""
    config = sc_config(upstream, applicability={"enabled": False}, claims={"enabled": False})
    config["trustgate"]["scoring"]["sc"].update(samples=2, skip_when_consistent=False)
    config["trustgate"].update(
        server={"port": free_port()},
        store={"path": str(tmp_path / f"{path}.sqlite3")},
        passthrough=path == "passthrough",
    )
    file = tmp_path / f"{path}.yaml"
    file.write_text(yaml.safe_dump(config))
    with serve_config(file, timeout=120, args=("--log-format", "json")) as gateway:  # no banner: log lines only
        start = len(gateway.output)
        ids = []
        for route, body in TRAFFIC:
            reply = httpx.post(f"{gateway.url}{route}", headers=AUTH, json={"model": "fake", **body}, timeout=60)
            ids += [reply.headers["x-trust-id"]] if reply.status_code == 200 else []
        for record_id in ids:  # the scoring worker's calls are this traffic's too
            assert wait_for_record(gateway, record_id, timeout=60)["status"] == "done"  # type: ignore[arg-type]
        # The worker wrote its lines before its records were done: once a later request's line is read, so are they.
        httpx.get(f"{gateway.url}/health/liveness", timeout=10)
        while not any('"GET /health/liveness' in line for line in gateway.output[start:]):
            time.sleep(0.05)
        logged = [line for line in gateway.output[start:] if '\\"GET /' not in line]  # the test's own reads
    return [_event(line) for line in logged]


def _event(line: str) -> str:
    """A JSON log line as ``logger: message``; any other line (text printed past the log) as it is."""
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return line.rstrip("\n")
    return f"{event['logger']}: {event['message']}"


def test_the_same_traffic_logs_one_line_per_event_on_both_paths(tmp_path: Path, fake_upstream: FakeUpstream) -> None:
    """A request is its access line, an upstream failure its one line, on either path: none of litellm's lines
    for each call (``completion() model=...``, the Router's ``200 OK``) are written at INFO."""
    upstream = fake_upstream.url  # type: ignore[attr-defined]
    passthrough = _events_logged(tmp_path, upstream, "passthrough")
    litellm = _events_logged(tmp_path, upstream, "litellm")
    assert len(litellm) == len(passthrough), "\n".join(["passthrough:", *passthrough, "litellm:", *litellm])
    for lines in (passthrough, litellm):
        assert sum(line.startswith("uvicorn.access: ") for line in lines) == len(TRAFFIC), lines
        assert sum("upstream failure (500" in line for line in lines) == 1, lines
        assert len(lines) == len(TRAFFIC) + 1, lines


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


def _litellm_lines(level: str) -> list[str]:
    """What litellm's Router writes through the gateway's log, at the gateway's ``level``: an INFO line about a
    call and a WARNING, both coloured as litellm colours them."""
    code = (
        "import logging; from proxy.base.log_format import configure_logging; "
        f"configure_logging('text', level=logging.{level}); "
        "from proxy.base.litellm_module import imported_litellm; imported_litellm(); "
        "router = logging.getLogger('LiteLLM Router'); "
        "router.info('litellm.acompletion(model=openai/m)\\x1b[32m 200 OK\\x1b[0m'); "
        "router.warning('\\x1b[31mdeployment cooling down\\x1b[0m')"
    )
    return [line.split(" ", 2)[2] for line in _stderr_of(code, terminal=False).decode().splitlines()]


def test_litellms_lines_are_the_gateways_own_once_each_its_info_at_debug() -> None:
    assert _litellm_lines("INFO") == ["WARNING LiteLLM Router: deployment cooling down"]
    assert [line for line in _litellm_lines("DEBUG") if "Router" in line] == [  # litellm's own DEBUG lines too
        "DEBUG LiteLLM Router: litellm.acompletion(model=openai/m) 200 OK",
        "WARNING LiteLLM Router: deployment cooling down",
    ]


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
            json={"model": "fake", "messages": [{"role": "user", "content": "Who says hello?"}]},
            timeout=30,
        )
        assert reply.status_code == 200 and reply.headers["x-trust-status"] == "done", reply.text
    finally:
        scoring_log.removeHandler(seen)
    failed = [request_id for message, request_id in seen.seen if message.startswith("scorer fc failed")]
    assert failed == [ASKED_ID], seen.seen


def test_the_scoring_workers_lines_carry_the_request_id(tmp_path: Path, fake_upstream: FakeUpstream) -> None:
    """By default scoring runs in a child process (``scoring.worker: child``): its lines for sc's re-asks (which
    fail here, so that it writes some) name the request whose answer they score."""
    config = sc_config(fake_upstream.url, mode="sync")  # type: ignore[attr-defined]
    config["trustgate"].update(
        server={"port": free_port()}, store={"path": str(tmp_path / "records.sqlite3")}, passthrough=False
    )
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    answers = iter(["Paris"])
    fake_upstream.responder = lambda messages: next(answers)  # the user's call answered, every re-ask a 500
    with serve_config(path, environ={"TRUSTGATE_LOG_FORMAT": "json"}, timeout=120) as gateway:
        reply = httpx.post(
            f"{gateway.url}/v1/chat/completions",
            timeout=60,
            headers={**AUTH, "x-trustgate-mode": "sync", "x-request-id": ASKED_ID},
            json={"model": "fake", "messages": [{"role": "user", "content": "Capital of France?"}]},
        )
        assert reply.status_code == 200 and reply.headers["x-trust-status"] != "pending", reply.text
    gateway.process.wait(30)
    failures = [
        event
        for event in map(json.loads, gateway.output)
        if event["logger"] == "trustgate.upstream" and event["message"].startswith("upstream failure (500")
    ]
    assert failures, gateway.output  # written by the worker: the user's call succeeded
    assert {event.get("request_id") for event in failures} == {ASKED_ID}, failures


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
