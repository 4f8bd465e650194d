"""``lp`` on the embedded default, end to end: the README's first sync ``curl`` against ``trustgate serve`` with
the real llama.cpp server and SmolLM2 returns ``x-trust-lp``, and so do a sync stream and a legacy completion,
while the client, which asked for no log-probabilities, sees none. An answer whose score misses
``sync_timeout_s`` (on a loaded machine) shows none, and its record has the ``lp`` the header would have had."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import httpx
import pytest

from tests.assets import DATA_DIR
from tests.e2e.gateway_process import AUTH, REPO, GatewayProcess
from tests.e2e.sync_after_async import wait_all_final
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


def scored_lp(url: str, status: str, trust_id: str, shown: str | float | None) -> dict[str, Any]:
    """The answer's ``lp`` component from its record once scored; the value shown with the answer (a header or
    the stream's trust object) when the score beat ``sync_timeout_s``, and none when it did not. Which of the two
    a loaded 2-core machine gives is ``bench.embedded_default``'s question, not this test's."""
    (record,) = wait_all_final(url, [trust_id])
    assert record["status"] == "done", record
    lp: dict[str, Any] = record["components"]["lp"]
    if status == "done":
        assert shown is not None and float(shown) == pytest.approx(lp["value"], abs=5e-5)
    else:
        assert status == "pending" and shown is None, (status, shown)
    return lp


def test_the_readme_first_sync_curl_returns_x_trust_lp(default_gateway: GatewayProcess) -> None:
    command = readme_sync_curl().replace(README_URL, default_gateway.url)
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300, check=True)
    headers, body = headers_and_body(done.stdout)
    assert body["choices"][0]["message"]["content"] and visible_logprobs(body) == []  # the client asked none
    lp = scored_lp(default_gateway.url, headers["x-trust-status"], headers["x-trust-id"], headers.get("x-trust-lp"))
    assert 0 < lp["value"] <= 1 and lp["details"]["tokens"] > 0


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
    lp = scored_lp(default_gateway.url, trust["status"], trust["id"], trust["components"].get("lp"))
    assert 0 < lp["value"] <= 1
    assert visible_logprobs(events) == []

    completion = httpx.post(
        f"{default_gateway.url}/v1/completions",
        headers=sync,
        timeout=300,
        json={"model": "local", "prompt": "The capital of France is", "max_tokens": 16, "temperature": 0},
    )
    assert completion.status_code == 200
    headers = completion.headers
    lp = scored_lp(default_gateway.url, headers["x-trust-status"], headers["x-trust-id"], headers.get("x-trust-lp"))
    assert 0 < lp["value"] <= 1
    assert visible_logprobs(completion.json()) == []
