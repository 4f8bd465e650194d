"""The multiple-choice check: options, the paper's prompt, and reading the model's letter.

Each check shows the original answer among three distractors at a random
letter (A-D), with "None of the above" last, behind the few-shot prompt of the
TrustScore paper (Table 5) verbatim. Replies are free text, so the letter is
read leniently: "B", "(B)", "b.", "Answer: B", "The answer is option B) ...",
or the text of an option; anything else is ``None`` (the model did not choose
the original). Pure functions; the caller owns the random generator.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "NONE_OF_THE_ABOVE",
    "PROMPT_HEADER",
    "MultipleChoice",
    "build_choice",
    "letter_probabilities",
    "parse_choice",
    "render_prompt",
]

LETTERS = "ABCDE"
NONE_OF_THE_ABOVE = "None of the above."  # as in the paper's generated questions (Table 7)

# TrustScore, Table 5: "Prompt for Behavior Consistency Evaluation", one line per option.
PROMPT_HEADER = """INSTRUCTION: Please give answers to the following multi-choice questions about knowledge.
Question: who has been ranked no. 1 in the latest football rankings announced by fifa?
A) Germany has been ranked no. 1 in the latest football rankings announced by fifa.
B) India has been ranked no. 1 in the latest football rankings announced by fifa.
C) Canada has been ranked no. 1 in the latest football rankings announced by fifa.
D) Austria has been ranked no. 1 in the latest football rankings announced by fifa.
E) None of above.
Answer: E

Question: who sings i just want to use your love tonight?
A) Latin rock band the Outfield sings i just want to use your love tonight.
B) English Power pop band the Outfield sings i just want to use your love tonight.
C) English rock band the Outfield sings i just want to use your love tonight.
D) English melodic sensibility band the Outfield sings i just want to use your love tonight.
E) None of above.
Answer: C

Question: where was the movie the glass castle filmed?
A) The movie the glass castle was filmed in London.
B) The movie the glass castle was filmed in Welch, West Virginia.
C) The movie the glass castle was filmed in Philadelphia.
D) The movie the glass castle was filmed in Budapest.
E) None of above.
Answer: B

Question: who was the first lady nominated member of the rajya sabha?
A) William Randolph Hearst was the first lady nominated member of the rajya sabha.
B) Jesse Speight was the first lady nominated member of the rajya sabha.
C) Thurlow Weed was the first lady nominated member of the rajya sabha.
D) Mary Kom was the first lady nominated member of the rajya sabha.
E) None of above.
Answer: D

Question: what is on a mcchicken sandwich from mcdonalds?
A) A breaded chicken patty is on a mcchicken sandwich from mcdonalds.
B) A Hot dog chicken patty is on a mcchicken sandwich from mcdonalds.
C) A breaded Bacon is on a mcchicken sandwich from mcdonalds.
D) A breaded Teriyaki chicken is on a mcchicken sandwich from mcdonalds.
E) None of above.
Answer: A
"""


@dataclass(frozen=True)
class MultipleChoice:
    question: str
    options: tuple[str, ...]  # in letter order; the last is "None of the above"
    original: str  # the original answer's letter

    @property
    def letters(self) -> str:
        return LETTERS[: len(self.options)]


def build_choice(
    question: str, answer: str, distractors: Sequence[str], rng: random.Random, position: int | None = None
) -> MultipleChoice:
    """The answer among the (up to 3) distractors, then "None of the above".

    At ``position`` (0 is A) when given (the debiased procedure balances it
    across checks), else at a random one.
    """
    shown = list(distractors[:3])
    if position is None:
        position = rng.randrange(len(shown) + 1)
    elif not 0 <= position <= len(shown):
        raise ValueError(f"position {position} outside 0..{len(shown)}")
    shown.insert(position, answer)
    return MultipleChoice(question, (*shown, NONE_OF_THE_ABOVE), LETTERS[position])


_INSTRUCTION, _EXAMPLES_TEXT = PROMPT_HEADER.split("\n", 1)
EXAMPLES = tuple(_EXAMPLES_TEXT.strip("\n").split("\n\n"))


def render_prompt(choice: MultipleChoice, examples: int = len(EXAMPLES)) -> str:
    """Table 5's prompt with its first ``examples`` worked examples (all five by default).

    Fewer examples make a much shorter prompt (about 120 tokens with none, 610 with
    all five), which matters on a small CPU model where prompt length is most of a check's cost.
    """
    lines = [_INSTRUCTION, *(example + "\n" for example in EXAMPLES[:examples]), f"Question: {choice.question.strip()}"]
    lines += [f"{letter}) {option}" for letter, option in zip(choice.letters, choice.options, strict=True)]
    return "\n".join(lines) + "\nAnswer:"


_LEAD_IN = re.compile(
    r"^(?:the\s+)?(?:correct\s+|right\s+|best\s+|final\s+)?(?:answer|choice|option)s?\b"
    r"\s*(?:is\b)?\s*[:\-]?\s*",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^[(\[]?([A-Ea-e])(?:[)\].:,]|\s*$)")
_LABEL_THEN_TEXT = re.compile(r"^([A-E])\s+(\S.*)$")
_ANYWHERE = (
    re.compile(r"\b(?:answer|option|choice)\s*(?:is\s*)?[:\-]?\s*[(\[]?([A-E])\b(?![a-z'])", re.IGNORECASE),
    re.compile(r"[(\[]([A-E])[)\]]"),
    re.compile(r"\b([A-E])\)"),
)
_NONE = re.compile(r"^none(?: of (?:the )?above)?$")


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[*_`\"]", "", text).lower().split()).rstrip(".!")


def _by_text(body: str, choice: MultipleChoice) -> str | None:
    """The letter of the option whose text the reply gives (exactly, or as its start or whole)."""
    reply = _plain(body)
    if _NONE.match(reply):
        return choice.letters[-1]
    options = [_plain(o) for o in choice.options]
    exact = [i for i, o in enumerate(options) if o == reply]
    if not exact:
        exact = [i for i, o in enumerate(options) if reply.startswith(o) or (len(reply) >= 12 and o.startswith(reply))]
    return choice.letters[exact[0]] if len(exact) == 1 else None


def _label_then_its_text(body: str, choice: MultipleChoice) -> str | None:
    """ "B Louisiana was returned": a bare letter followed by the start of that option's text."""
    match = _LABEL_THEN_TEXT.match(body)
    if match is None or match.group(1) not in choice.letters:
        return None
    rest, option = _plain(match.group(2)), _plain(choice.options[choice.letters.index(match.group(1))])
    return match.group(1) if len(rest) >= 4 and (option.startswith(rest) or rest.startswith(option)) else None


def parse_choice(text: str, choice: MultipleChoice) -> str | None:
    """The letter a reply chose, or ``None`` when it cannot be read as one of the options."""
    body = re.sub(r"[*_`]", "", text).strip()
    for _ in range(3):
        body = _LEAD_IN.sub("", body, count=1).strip()
    letter: str | None = None
    if match := _LABEL.match(body):
        letter = match.group(1).upper()
    else:
        letter = _by_text(body, choice) or _label_then_its_text(body, choice)
        for pattern in _ANYWHERE if letter is None else ():
            found = {m.upper() for m in pattern.findall(body)}
            if len(found) == 1:
                letter = found.pop()
                break
    return letter if letter is not None and letter in choice.letters else None


def _letter_of_token(token: str, letters: str) -> str | None:
    core = token.replace("Ġ", " ").replace("▁", " ").strip().strip("()[]*.:").strip()
    return core.upper() if len(core) == 1 and core.upper() in letters else None


def letter_probabilities(
    top_logprobs: Sequence[dict[str, float]] | None, letters: str, max_position: int = 8
) -> dict[str, float] | None:
    """Probability of each letter where the model wrote its letter, normalised over ``letters``.

    Models often spend their first tokens on "Answer:" or "(", so the position
    used is the first (of ``max_position``) whose most likely token is a letter.
    """
    for alternatives in (top_logprobs or [])[:max_position]:
        if not alternatives:
            continue
        if _letter_of_token(max(alternatives, key=lambda t: alternatives[t]), letters) is None:
            continue
        mass = dict.fromkeys(letters, 0.0)
        for token, logprob in alternatives.items():
            if (letter := _letter_of_token(token, letters)) is not None:
                mass[letter] += math.exp(logprob)
        total = sum(mass.values())
        return {letter: value / total for letter, value in mass.items()}
    return None
