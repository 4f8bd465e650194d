"""A scripted truthful upstream for long answers with planted false claims (``trustgate eval claims``).

Each item of a long-answer set is a question and the sentences of its answer; a sentence that is false
carries its ``truth`` (``{"text": "It was completed in 1920.", "truth": "It was completed in 1889."}``).
Asked the question, the model gives the answer as written, false sentence included (the plant). Asked to
check anything about it, it knows the truth:

- a Trust_BC check: it picks the option that is true, and "None of the above" when none is;
- the Trust_FC judge (either procedure): "support" / "yes" for a true statement, "contradict" / "no" for a
  false one, whatever evidence it is shown;
- asked the question again (``sc``): the same answer; its token log-probabilities know nothing of truth.

A statement is judged by what it says, not by its wording: its content words (``scoring.factcheck``'s BM25
tokens) are compared with the item's sentences, false and true. It is false when it is nearer a planted
false sentence than any true one, or when it says a word that no true sentence and not the question says
(a distractor's substituted name or number). Resolved pronouns and clauses of a sentence are judged like the
sentence itself, so the same script serves any split.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from scoring.factcheck import tokenize

from .datasets import DatasetError

__all__ = ["LongAnswer", "Sentence", "TruthfulModel", "read_long_answers"]

_OPTION = re.compile(r"^([A-E])\) (.*)$")
_ANSWER_FIELD = re.compile(r"^Answer: (.*)$", re.MULTILINE)
_NONE = re.compile(r"^none of (?:the )?above\.?$", re.IGNORECASE)


@dataclass(frozen=True)
class Sentence:
    text: str
    truth: str | None = None  # set on a planted false sentence: what is true instead

    @property
    def false(self) -> bool:
        return self.truth is not None


@dataclass(frozen=True)
class LongAnswer:
    """One item: a question and its answer's sentences, at most one of them false."""

    id: str
    question: str
    sentences: tuple[Sentence, ...]

    @property
    def answer(self) -> str:
        return " ".join(s.text for s in self.sentences)

    @property
    def correct(self) -> bool:
        return not any(s.false for s in self.sentences)

    def sentence_at(self, offset: int) -> int:
        """The index of the sentence the answer's character ``offset`` falls in."""
        end = 0
        for index, sentence in enumerate(self.sentences):
            end += len(sentence.text) + 1
            if offset < end:
                return index
        return len(self.sentences) - 1


def read_long_answers(path: Path) -> list[LongAnswer]:
    """A long-answer set: one JSON object a line, ``{"id", "question", "sentences": [{"text", "truth"?}]}``."""
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            sentences = tuple(Sentence(s["text"], s.get("truth")) for s in row["sentences"])
            items.append(LongAnswer(str(row["id"]), row["question"], sentences))
        except (ValueError, KeyError, TypeError) as exc:
            raise DatasetError(f"{path}:{number}: not a long-answer item ({exc})") from exc
    if not items:
        raise DatasetError(f"{path}: no items")
    return items


def _words(text: str) -> set[str]:
    """Content words; a lone letter (a possessive's "s", an initial) says nothing."""
    return {word for word in tokenize(text) if len(word) > 1}


def _similarity(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


@dataclass
class _Facts:
    """What the model knows of one item: its true sentences' words, and its planted false sentences."""

    item: LongAnswer
    true: list[set[str]] = field(default_factory=list)
    false: list[set[str]] = field(default_factory=list)
    vocabulary: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.true = [_words(s.truth or s.text) for s in self.item.sentences]
        self.false = [_words(s.text) for s in self.item.sentences if s.false]
        self.vocabulary = _words(self.item.question).union(*self.true)

    def closeness(self, statement: str) -> float:
        """How near the statement is to a true sentence (0: false)."""
        words = _words(statement)
        if not words:
            return 0.0
        best_true = max(_similarity(words, t) for t in self.true)
        best_false = max((_similarity(words, f) for f in self.false), default=0.0)
        if best_false > best_true or not words <= self.vocabulary:
            return 0.0
        return best_true


@dataclass
class TruthfulModel:
    """The script: the planted answers, and the truth behind every check of them."""

    items: Sequence[LongAnswer]
    seed: int = 0
    _facts: dict[str, _Facts] = field(default_factory=dict, init=False)  # by question
    _by_answer: dict[str, _Facts] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        for item in self.items:
            facts = _Facts(item)
            self._facts[item.question.strip()] = facts
            self._by_answer[item.answer] = facts

    def _about(self, prompt: str) -> _Facts | None:
        """The item a check's prompt is about: the one whose question it asks."""
        return next((facts for question, facts in self._facts.items() if question in prompt), None)

    def check(self, prompt: str, facts: _Facts) -> str:
        """A Trust_BC check's letter: the truest option, or "None of the above" when none is true."""
        block = prompt.rsplit("Question: ", 1)[-1]
        options = {m.group(1): m.group(2).strip() for line in block.splitlines() if (m := _OPTION.match(line))}
        none = next((letter for letter, text in options.items() if _NONE.match(text)), "E")
        scored = {letter: facts.closeness(text) for letter, text in options.items() if letter != none}
        best = max(scored, key=lambda letter: (scored[letter], -ord(letter)), default=none)
        return best if scored.get(best, 0.0) > 0 else none

    def judge(self, prompt: str, facts: _Facts) -> bool:
        """Whether the statement under judgement (the prompt's last "Answer:") is true."""
        answers = _ANSWER_FIELD.findall(prompt)
        return bool(answers) and facts.closeness(answers[-1]) > 0

    def reply(self, prompt: str) -> tuple[str, dict[str, float] | None]:
        facts = self._about(prompt)
        if facts is None:
            return "I do not know.", None
        if "multi-choice questions" in prompt:
            letter = self.check(prompt, facts)
            return letter, {letter: -0.05, **{other: -4.0 for other in "ABCDE" if other != letter}}
        if prompt.startswith("INSTRUCTION: Assess whether the provided evidence"):
            true = self.judge(prompt, facts)
            if prompt.rstrip().endswith("Reply:"):  # the yes/no choice judge
                return ("yes", {"yes": -0.1, "no": -2.4}) if true else ("no", {"no": -0.1, "yes": -2.4})
            return "support" if true else "contradict", None
        return facts.item.answer, None
