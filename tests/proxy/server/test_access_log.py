"""Access logs never carry query-string values, and name each request's id: `trustgate serve` as a real process,
its log captured."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from proxy.server.access_log import redact_query
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.redis_server import free_port


@pytest.mark.unit
def test_redact_query_keeps_the_path_and_plain_parameter_names() -> None:
    assert redact_query("/v1/models") == "/v1/models"
    assert redact_query("/v1/models?key=sk-1&limit=5") == "/v1/models?key=[redacted]&limit=[redacted]"
    assert redact_query("/x?sk-secret-as-a-name&a%20b=c") == "/x?[redacted]&[redacted]"


@pytest.mark.integration
def test_the_access_log_has_no_query_values_and_names_request_ids(fake_upstream: FakeUpstream, tmp_path: Path) -> None:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {
        "store": {"path": str(tmp_path / "records.sqlite3")},
        "scoring": {"consistency": {"enabled": False}, "factcheck": {"enabled": False}, "rag": {"enabled": False}},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "trustgate",
                "serve",
                "--config",
                str(path),
                "--port",
                str(port),
                "--host",
                "127.0.0.1",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(Path.cwd())},
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "the gateway did not start"
                try:
                    httpx.get(f"{url}/health/liveness", timeout=1)
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            reply = httpx.get(
                f"{url}/v1/models?key={MASTER_KEY}&api_key={MASTER_KEY}",
                headers={"authorization": f"Bearer {MASTER_KEY}", "x-request-id": "log-me-1"},
                timeout=10,
            )
            assert reply.status_code == 200
            generated = httpx.get(f"{url}/v1/models", timeout=10).headers["x-request-id"]  # a 401
        finally:
            process.terminate()
            process.wait(timeout=20)
    text = log.read_text()
    assert '"GET /v1/models?key=[redacted]&api_key=[redacted] HTTP/1.1" 200 request_id=log-me-1' in text
    assert f'"GET /v1/models HTTP/1.1" 401 request_id={generated}' in text
    assert MASTER_KEY not in text
