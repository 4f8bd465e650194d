"""Scripted models with known consistency rates, answered through the real ``ConsistencyScorer``.

Each simulated answer has a consistency rate ``p``. For each check the
scripted model reads the options from the scorer's own prompt, finds its
answer's letter, and forms a letter distribution: the original gets a
probability drawn from Beta(κp, κ(1-p)) (κ = 4, so checks differ as their
distractors would make them differ), the rest is split at random among the
other letters. It replies with a letter drawn from that distribution and
returns the distribution as the first token's ``top_logprobs``, so the chance
that a check is consistent is exactly ``p`` and its graded observation (the
letter's probability) is what a calibrated model would give.

The letter-bias variant mixes in a favourite letter (C) with weight 0.5, as
SmolLM2-135M does: the chance of a consistent check becomes
0.5·p + 0.5·P(original shown at C) and the letter probabilities carry the habit.

Distractors are placeholders ("<answer> (variant k)"): the scorer needs
options to show, not their meaning, and the simulation must not depend on the
knowledge graph.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Any

from scoring.consistency.distractors import Distractor, DistractorGenerator, DistractorPool
from scoring.types import Reply

__all__ = ["PlaceholderDistractors", "ScriptedModel", "SimulatedAnswer", "simulated_answers"]

CONCENTRATION = 4.0
FAVOURITE, BIAS = "C", 0.5
_OPTION = re.compile(r"^([A-E])\) (.*)$")


class PlaceholderDistractors(DistractorGenerator):
    """Numbered variants of the answer; no parser, no knowledge sources."""

    def __init__(self) -> None:  # the parent's parser and sources are never used
        pass

    def generate(self, question: str, answer: str, num: int, rng: random.Random) -> DistractorPool:
        return DistractorPool(
            answer,
            [Distractor(f"{answer} (variant {k})", answer, f"variant {k}", "numeric") for k in range(num)],
            level=0,
        )


@dataclass(frozen=True)
class SimulatedAnswer:
    id: str
    question: str
    answer: str
    rate: float
    biased: bool


def simulated_answers(per_rate: int, biased: bool) -> list[SimulatedAnswer]:
    rates = [round(0.1 * k, 1) for k in range(1, 10)]
    kind = "biased" if biased else "plain"
    return [
        SimulatedAnswer(
            f"{kind}/{rate}/{n}",
            f"Simulated question {n} at rate {rate}?",
            f"Simulated answer {n} at rate {rate}",
            rate,
            biased,
        )
        for rate in rates
        for n in range(per_rate)
    ]


class ScriptedModel:
    """An ``Ask`` playing a model that picks ``answer`` with the answer's rate (see the module docstring)."""

    def __init__(self, answer: SimulatedAnswer, rng: random.Random) -> None:
        self._answer = answer
        self._rng = rng

    def _options(self, prompt: str) -> tuple[list[str], str]:
        last_question = prompt.rsplit("Question:", 1)[1]
        shown = [m.groups() for line in last_question.splitlines() if (m := _OPTION.match(line))]
        original = next(letter for letter, text in shown if text == self._answer.answer)
        return [letter for letter, _ in shown], original

    def _distribution(self, letters: list[str], original: str) -> dict[str, float]:
        rate = self._answer.rate
        mine = self._rng.betavariate(CONCENTRATION * rate, CONCENTRATION * (1.0 - rate))
        weights = {letter: self._rng.gammavariate(1.0, 1.0) for letter in letters if letter != original}
        spread = sum(weights.values())
        distribution = {original: mine, **{letter: (1.0 - mine) * w / spread for letter, w in weights.items()}}
        if self._answer.biased:
            distribution = {
                letter: (1.0 - BIAS) * p + BIAS * (letter == FAVOURITE) for letter, p in distribution.items()
            }
        return distribution

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int = 16,
        temperature: float | None = 0.0,
        logprobs: bool = False,
        top_logprobs: int | None = None,
        seed: int | None = None,
    ) -> Reply:
        letters, original = self._options(str(messages[-1]["content"]))
        distribution = self._distribution(letters, original)
        chosen = self._rng.choices(list(distribution), weights=list(distribution.values()))[0]
        alternatives = {letter: math.log(max(p, 1e-12)) for letter, p in distribution.items()}
        return Reply(text=chosen, top_logprobs=[alternatives] if logprobs else None)
