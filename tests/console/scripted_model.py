"""The answering model the console's browser tests play with the fake upstream, and the scoring assets they need.

For one question it keeps picking its own answer and the judge finds support; for the other it picks a
distractor and the judge contradicts: the real scorers then label one answer trusted and the other untrusted.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.assets import DATA_DIR, assets_built
from tests.fake_upstream import last_user_text
from tests.servers import ServerThread

__all__ = [
    "ANSWER",
    "DATA_DIR",
    "TRUSTED_QUESTION",
    "UNTRUSTED_QUESTION",
    "ask",
    "assets_missing",
    "model_behaviour",
]

TRUSTED_QUESTION = "What is the capital of France?"
UNTRUSTED_QUESTION = "Which city is the capital of France?"
ANSWER = "Paris is the capital of France."


def assets_missing() -> bool:
    return not assets_built()


def model_behaviour(messages: list[dict[str, Any]]) -> str:
    """Consistent and supported for TRUSTED_QUESTION; a distractor and a contradiction for the other."""
    prompt = last_user_text(messages)
    honest = TRUSTED_QUESTION in prompt
    if prompt.startswith("INSTRUCTION: Please give answers"):
        question = prompt.rsplit("Question:", 1)[1]
        options = dict(re.findall(r"^([A-E])\) (.*)$", question, re.MULTILINE))
        original = next(letter for letter, text in options.items() if text == ANSWER)
        return original if honest else next(letter for letter in "ABCD" if letter != original)
    if prompt.startswith("INSTRUCTION: Assess whether the provided evidence"):
        return "support" if honest else "contradict"
    return ANSWER


def ask(server: ServerThread, key: str, question: str) -> str:
    """Ask model ``fake`` through the gateway with ``key``; the answer's trust status (sync mode: its end)."""
    response = httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={"authorization": f"Bearer {key}"},
        json={"model": "fake", "messages": [{"role": "user", "content": question}]},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    return response.headers["x-trust-status"]
