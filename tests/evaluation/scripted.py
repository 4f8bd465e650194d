"""A scripted model for the fake upstream: known answers, confidences, multiple-choice picks and judge labels.

Each question has a ``Script``: the answer the model gives, the confidence it
states, whether it picks its own answer again in every multiple-choice check
(consistent) or another option, and the label it gives as fact-check judge.
The prompts are recognised by the openings the harness and the scorers use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tests.fake_upstream import last_user_text

_OPTION = re.compile(r"^([A-E])\) (.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Script:
    question: str
    gold: str
    answer: str
    confidence: str
    consistent: bool
    judge: str  # support / contradict / neutral


class ScriptedModel:
    def __init__(self, scripts: list[Script]) -> None:
        self.by_question = {s.question: s for s in scripts}
        self.by_answer = {s.answer: s for s in scripts}

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        prompt = last_user_text(messages)
        if prompt.startswith("INSTRUCTION: Please give answers to the following questions"):
            question = prompt.rsplit("Question: ", 1)[1].removesuffix("\nAnswer:")
            return f"{self.by_question[question].answer}\n\nQuestion: what comes next?"
        if prompt.startswith("INSTRUCTION: Please give answers to the following multi-choice"):
            options = dict(_OPTION.findall(prompt.rsplit("Question:", 1)[1]))
            original = next(letter for letter, text in options.items() if text in self.by_answer)
            if self.by_answer[options[original]].consistent:
                return original
            return next(letter for letter in "ABCD" if letter != original and letter in options)
        if prompt.startswith("INSTRUCTION: Assess whether the provided evidence"):
            return self.by_answer[prompt.rsplit("Answer: ", 1)[1].removesuffix("\nRelation:")].judge
        if "\nProposed answer: " in prompt:
            return self.by_question[prompt.split("\n", 1)[0].removeprefix("Question: ")].confidence
        raise AssertionError(f"unexpected prompt: {prompt[:80]}")


# Four questions with hand-checkable outcomes (labels by gold matching: 1, 0, 1, 0):
#   Trust_BC binary 1 0 0 1 · Trust_FC 1 0 1 0.5 · Trust_OV (Table 3) 1.0 0.0 0.8 0.6 · confidence .9 .8 .6 .7
ALBUMS = [
    Script("When did all night long come out?", "1983", "All night long came out in 1983.", "90", True, "support"),
    Script("When did thriller come out?", "1982", "Thriller came out in 1985.", "80", False, "contradict"),
    Script("When did bad come out?", "1987", "Bad came out in 1987.", "60", False, "support"),
    Script("When did off the wall come out?", "1979", "Off the wall came out in 1975.", "70%", True, "neutral"),
]

EVIDENCE = [
    {"id": "all-night-long", "title": "All Night Long", "text": "All Night Long is a song by Lionel Richie, 1983."},
    {"id": "thriller", "title": "Thriller", "text": "Thriller is an album by Michael Jackson released in 1982."},
    {"id": "bad", "title": "Bad", "text": "Bad is an album by Michael Jackson released in 1987."},
    {"id": "off-the-wall", "title": "Off the Wall", "text": "Off the Wall came out in 1979 on Epic Records."},
]
