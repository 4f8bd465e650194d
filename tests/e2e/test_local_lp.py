"""``lp`` on the embedded default, end to end: the README's first sync ``curl`` against ``trustgate serve`` with
the real llama.cpp server and SmolLM2 returns ``x-trust-lp``, and so do a sync stream and a legacy completion,
while the client, which asked for no log-probabilities, sees none."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import httpx
import pytest

from tests.built_assets import DATA_DIR
from tests.e2e.gateway_process import AUTH, REPO, GatewayProcess
from tests.proxy.logprob_replies import visible_logprobs

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not (DATA_DIR / "factcheck" / "index").exists() or not (DATA_DIR / "consistency" / "vectors.bin").exists(),
        reason="scoring assets not built: `make install` builds them",
    ),
]

README_URL = "http://127.0.0.1:4000"


def readme_sync_curl() -> str:
    """The README's first ``curl`` command that asks for sync mode, its line continuations joined."""
    readme = (REPO / "README.md").read_text()
    found = re.search(r"^\s*(curl [^\n]*\\\n(?:[^\n]*\\\n)*[^\n]*)$", readme, re.MULTILINE)
    assert found is not None and "x-trustgate-mode: sync" in found.group(1)
    return found.group(1).replace("\\\n", " ")


def headers_and_body(curl_output: str) -> tuple[dict[str, str], dict[str, Any]]:
    """``curl -D -`` output: the last header block (lower-cased names) and the JSON body."""
    head, body = curl_output.replace("\r\n", "\n").rsplit("\n\n", 1)
    lines = head.split("\n")[1:]
    return {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in lines)}, json.loads(body)


def test_the_readme_first_sync_curl_returns_x_trust_lp(default_gateway: GatewayProcess) -> None:
    command = readme_sync_curl().replace(README_URL, default_gateway.url)
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300, check=True)
    headers, body = headers_and_body(done.stdout)
    assert headers["x-trust-status"] == "done", headers
    assert 0 < float(headers["x-trust-lp"]) <= 1
    assert body["choices"][0]["message"]["content"] and visible_logprobs(body) == []  # the client asked none
    record = httpx.get(f"{default_gateway.url}/v1/trust/{headers['x-trust-id']}", headers=AUTH, timeout=10).json()
    assert record["components"]["lp"]["details"]["tokens"] > 0


def test_a_sync_stream_and_a_legacy_completion_have_lp(default_gateway: GatewayProcess) -> None:
    sync = {**AUTH, "x-trustgate-mode": "sync"}
    body = {
        "model": "local",
        "messages": [{"role": "user", "content": "What is the largest planet?"}],
        "max_tokens": 24,
        "temperature": 0,
        "stream": True,
    }
    with httpx.stream(
        "POST", f"{default_gateway.url}/v1/chat/completions", json=body, headers=sync, timeout=300
    ) as reply:
        events = [json.loads(line[6:]) for line in reply.iter_lines() if line.startswith("data: {")]
    trust = next(event["trust"] for event in events if "trust" in event)
    assert trust["status"] == "done" and 0 < trust["components"]["lp"] <= 1
    assert visible_logprobs(events) == []

    completion = httpx.post(
        f"{default_gateway.url}/v1/completions",
        headers=sync,
        timeout=300,
        json={"model": "local", "prompt": "The capital of France is", "max_tokens": 16, "temperature": 0},
    )
    assert completion.status_code == 200 and completion.headers["x-trust-status"] == "done"
    assert 0 < float(completion.headers["x-trust-lp"]) <= 1
    assert visible_logprobs(completion.json()) == []
