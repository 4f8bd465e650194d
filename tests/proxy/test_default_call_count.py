"""Black-box: what scoring a clearly consistent answer costs on the default settings, in upstream calls.

A real gateway on the default scoring settings (every default scorer, the built
assets) in front of the fake upstream, which plays a clearly consistent model:
it picks its own answer in every Trust_BC check, its judge finds support, and
asked again it answers the same. The fake counts every call it gets.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream, last_user_text
from tests.servers import ServerThread

DATA_DIR = Path(__file__).resolve().parents[2] / "var" / "trustgate"
QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France."

pytestmark = pytest.mark.skipif(not (DATA_DIR / "factcheck" / "index").exists()
                                or not (DATA_DIR / "consistency" / "vectors.bin").exists(),
                                reason="scoring assets not built: `make install` builds them")


def consistent_model(messages: list[dict[str, Any]]) -> str:
    prompt = last_user_text(messages)
    if prompt.startswith("INSTRUCTION: Please give answers"):  # a Trust_BC check: its own answer's letter
        options = dict(re.findall(r"^([A-E])\) (.*)$", prompt.rsplit("Question:", 1)[1], re.MULTILINE))
        return next(letter for letter, text in options.items() if text == ANSWER)
    if prompt.startswith("INSTRUCTION: Assess whether the provided evidence"):  # Trust_FC's judge
        return "support"
    return ANSWER  # the user's question, and each time it is asked again


def scored(server: ServerThread) -> dict[str, Any]:
    response = httpx.post(f"{server.url}/v1/chat/completions", timeout=120,
                          headers={"authorization": f"Bearer {MASTER_KEY}", "x-trustgate-mode": "sync"},
                          json={"model": "fake", "messages": [{"role": "user", "content": QUESTION}]})
    assert response.headers["x-trust-status"] == "done"
    record: dict[str, Any] = httpx.get(f"{server.url}/v1/trust/{response.headers['x-trust-id']}",
                                       headers={"authorization": f"Bearer {MASTER_KEY}"}).json()
    return record


def test_a_clearly_consistent_answer_costs_seven_calls_on_the_defaults_and_four_without_sc(
        fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> None:
    """Issue 32 asks for at most 4. Trust_BC now stops after 3 agreeing checks (it took 6), and Trust_FC's
    judge is 1 call; ``sc``, on by default since issue 26, adds its 3 samples: 7. Without ``sc``: 4."""
    fake_upstream.responder = consistent_model
    config = gateway_config(fake_upstream.url, trustgate={  # type: ignore[attr-defined]
        "scoring": {"data_dir": str(DATA_DIR), "allow_client_mode": "any"}})
    record = scored(start_gateway(config, scorers=None))
    calls = {name: component.get("upstream_calls") for name, component in record["components"].items()}
    assert calls == {"bc": 3, "fc": 1, "lp": 0, "sc": 3, "ov": 0}
    assert len(fake_upstream.requests) - 1 == sum(calls.values()) == 7  # all but the user's own call
    bc = record["components"]["bc"]
    assert (bc["value"], bc["label"], bc["details"]["stop_reason"]) == (1.0, "consistent", "settled")
    assert record["label"] == "trusted"

    fake_upstream.requests.clear()
    config["trustgate"]["scoring"]["sc"] = {"enabled": False}
    record = scored(start_gateway(config, scorers=None))
    assert len(fake_upstream.requests) - 1 == sum(c["upstream_calls"] for c in record["components"].values()) == 4
    assert record["label"] == "trusted"
