"""The same answer scored by the gateway and by ``trustgate eval`` gets the same Trust_BC checks and value.

Both run as real processes of this checkout on one config (the default
Trust_BC settings, the built graph and vectors), each with its own
``PYTHONHASHSEED`` and its own embedded Oxigraph server: ``trustgate serve``
answers chat requests over a socket in sync mode, ``trustgate eval run --mode
given`` scores a JSONL of the same questions and answers. The fake upstream
plays the model; it picks each check's letter from the check's text alone, so
its choices, and so the values, follow the checks shown and nothing else.
"""

from __future__ import annotations

import collections
import os
import random
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml

from scoring.types import ComponentResult
from tests.assets import DATA_DIR
from tests.conftest import MASTER_KEY, gateway_config
from tests.e2e.gateway_process import REPO, GatewayProcess, free_port, serve_config
from tests.fake_upstream import FakeUpstream, last_user_text

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not (DATA_DIR / "consistency" / "vectors.bin").exists(),
        reason="scoring assets not built: `make install` builds them",
    ),
]

ANSWERS = {
    "What is the capital of France?": "Paris is the capital of France.",
    "When did all night long come out lionel richie?": "All night long came out in 1983.",
    "What do bees make?": "Bees make honey in their hives.",
}
MCQ = "INSTRUCTION: Please give answers"


def model(messages: list[dict[str, Any]]) -> str:
    """Answers the questions; in a check, a letter drawn from the prompt's text (a string seed is hashed
    with SHA-512, the same in every process)."""
    prompt = last_user_text(messages)
    if prompt.startswith(MCQ):
        return random.Random(prompt).choice("ABCDE")
    return ANSWERS[prompt]


@pytest.fixture
def config(fake_upstream: FakeUpstream, tmp_path: Path) -> Path:
    """The fake as model group ``fake``; the default Trust_BC settings (seed included), no Trust_FC."""
    fake_upstream.responder = model
    settings = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    settings["trustgate"] = {
        "server": {"port": free_port()},
        "store": {"path": str(tmp_path / "records.sqlite3")},
        "scoring": {"data_dir": str(DATA_DIR), "mode": "sync", "sync_timeout_s": 120, "factcheck": {"enabled": False}},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(settings))
    return path


@pytest.fixture
def gateway(config: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GatewayProcess]:
    monkeypatch.setenv("PYTHONHASHSEED", "1")  # the eval runs with another
    with serve_config(config) as running:
        yield running


def mcq_prompts(fake: FakeUpstream) -> collections.Counter[str]:
    return collections.Counter(p for body in fake.requests if (p := last_user_text(body["messages"])).startswith(MCQ))


def scored_by_gateway(gateway: GatewayProcess, question: str) -> dict[str, Any]:
    auth = {"authorization": f"Bearer {MASTER_KEY}"}
    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        headers=auth,
        timeout=180,
        json={"model": "fake", "messages": [{"role": "user", "content": question}]},
    )
    assert response.status_code == 200 and response.headers["x-trust-status"] == "done", response.text
    record = httpx.get(f"{gateway.url}/v1/trust/{response.headers['x-trust-id']}", headers=auth, timeout=30).json()
    bc: dict[str, Any] = record["components"]["bc"]
    return bc


def scored_by_eval(config: Path, folder: Path) -> dict[str, dict[str, Any]]:
    """``trustgate eval run`` in given mode over the same answers; each item's Trust_BC result, from its cache."""
    dataset = folder / "answers.jsonl"
    dataset.write_bytes(
        b"".join(
            orjson.dumps({"id": str(n), "question": q, "answer": a, "label": n % 2}) + b"\n"
            for n, (q, a) in enumerate(ANSWERS.items())
        )
    )
    cache = folder / "cache.sqlite3"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "trustgate",
            "eval",
            "run",
            "--dataset",
            "jsonl",
            "--file",
            str(dataset),
            "--mode",
            "given",
            "--components",
            "bc",
            "--config",
            str(config),
            "--cache",
            str(cache),
            "--out",
            str(folder / "report"),
            "--bootstrap",
            "10",
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONHASHSEED": "2"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with sqlite3.connect(cache) as db:  # the cache's results table: one finished result per item and component
        rows = db.execute("SELECT item_id, result FROM results WHERE component = 'bc'").fetchall()
    questions = list(ANSWERS)
    return {
        questions[int(item)]: ComponentResult.model_validate_json(result).model_dump(mode="json")
        for item, result in rows
    }


def test_gateway_and_eval_ask_the_same_checks_and_get_the_same_value(
    gateway: GatewayProcess, config: Path, fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    by_gateway = {question: scored_by_gateway(gateway, question) for question in ANSWERS}
    asked_by_gateway = mcq_prompts(fake_upstream)
    fake_upstream.requests.clear()
    by_eval = scored_by_eval(config, tmp_path)
    assert mcq_prompts(fake_upstream) == asked_by_gateway  # the model saw the very same checks
    assert by_eval.keys() == by_gateway.keys()
    for question, answer in ANSWERS.items():
        mine, theirs = by_gateway[question], by_eval[question]
        checks = mine["details"]["checks"]
        assert len(checks) >= 2 and all(answer in check["options"] for check in checks)
        assert theirs["details"]["checks"] == checks  # options, the original's letter, order, replies
        assert (theirs["value"], theirs["label"]) == (mine["value"], mine["label"])
        assert mine["value"] is not None
