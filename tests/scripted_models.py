"""Fake models for one question, scripted for the real scorers' prompts: they pick (or never pick) their own
answer in Trust_BC's checks and answer Trust_FC's judge."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tests.fake_upstream import last_user_text

QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France."


def scripted(consistent: bool) -> Callable[[list[dict[str, Any]]], str]:
    """A fake model that picks its own answer in every Trust_BC check (consistent) or never does; its judge
    finds support only in evidence that names Paris."""

    def respond(messages: list[dict[str, Any]]) -> str:
        prompt = last_user_text(messages)
        if prompt.startswith("INSTRUCTION: Please give answers"):
            original = next(letter for letter, text in options(prompt).items() if text == ANSWER)
            return original if consistent else next(letter for letter in "ABCD" if letter != original)
        if prompt.startswith("INSTRUCTION: Assess whether the provided evidence"):
            return "support" if "Paris" in prompt.split("Question:")[0] else "neutral"
        return ANSWER

    return respond


def options(prompt: str) -> dict[str, str]:
    """A Trust_BC check's options by letter."""
    return dict(re.findall(r"^([A-E])\) (.*)$", prompt.rsplit("Question:", 1)[1], re.MULTILINE))


def model(consistent: bool) -> Callable[[list[dict[str, Any]]], str]:
    """A fake model that picks its own answer in every Trust_BC check (consistent) or never does; its judge
    finds support either way, and asked again it answers the same."""

    def respond(messages: list[dict[str, Any]]) -> str:
        prompt = last_user_text(messages)
        if prompt.startswith("INSTRUCTION: Please give answers"):  # a Trust_BC check
            return next(letter for letter, text in options(prompt).items() if (text == ANSWER) == consistent)
        if prompt.startswith("INSTRUCTION: Assess whether the provided evidence"):  # Trust_FC's judge
            return "support"
        return ANSWER  # the user's question, and each time it is asked again

    return respond
