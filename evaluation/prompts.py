"""What the harness asks the answering model, and how it reads the replies. Pure functions.

* The closed-book question-answering prompt of the TrustScore paper (Table 4),
  word for word, one line per question and answer. Small models continue the
  few-shot pattern past their answer ("... \\n\\nQuestion: ..."), so the answer
  is the reply up to the first blank line or next "Question:".
* The verbalised-confidence baseline: the model is shown its own answer and
  asked for a 0-100 confidence. Replies are loose ("85", "85%", "Confidence:
  0.85", "8/10", "I'd say about 70 percent"); the first number is read, on the
  scale it was written in, and a reply with no usable number is None.
"""

from __future__ import annotations

import re

__all__ = [
    "CLOSED_BOOK_PROMPT",
    "CONFIDENCE_PROMPT",
    "answer_end",
    "clean_answer",
    "closed_book_prompt",
    "confidence_prompt",
    "parse_confidence",
]

# TrustScore, Table 4: "Prompt for Close-book Question Answering".
CLOSED_BOOK_PROMPT = """INSTRUCTION: Please give answers to the following questions about knowledge.
Question: who has been ranked no. 1 in the latest football rankings announced by fifa?
Answer: Germany has been ranked no. 1 in the latest football rankings announced by fifa.

Question: who sings i just want to use your love tonight?
Answer: English rock band the Outfield sings i just want to use your love tonight.

Question: where was the movie the glass castle filmed?
Answer: The movie the glass castle was filmed in Welch, West Virginia.

Question: who was the first lady nominated member of the rajya sabha?
Answer: Mary Kom was the first lady nominated member of the rajya sabha.

Question: what is the tiger's name in life of pi?
Answer: Richard Parker is the tiger's name in life of pi.

Question: {question}
Answer:"""

CONFIDENCE_PROMPT = """Question: {question}
Proposed answer: {answer}
How confident are you that the proposed answer is correct? Reply with a single number from 0 (certainly wrong) \
to 100 (certainly right).
Confidence (0-100):"""

_ANSWER_END = re.compile(r"\n\s*\n|\n\s*Question:|\nQ:")
_ANSWER_LABEL = re.compile(r"^\s*(?:A:|Answer:)\s*", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.\-])(\d+(?:\.\d+)?|\.\d+)\s*(%|percent\b|/\s*(\d+)|out of\s+(\d+))?", re.IGNORECASE)


def closed_book_prompt(question: str) -> str:
    return CLOSED_BOOK_PROMPT.format(question=question.strip())


def confidence_prompt(question: str, answer: str) -> str:
    return CONFIDENCE_PROMPT.format(question=question.strip(), answer=answer.strip())


def answer_end(reply: str) -> int:
    """Where the answer ends in the raw reply: at the first blank line or new "Question:", else the end."""
    text = reply.rstrip()
    match = _ANSWER_END.search(text, len(text) - len(text.lstrip()))
    return match.start() if match else len(text)


def clean_answer(reply: str) -> str:
    """The answer sentence: the reply up to where the model starts a new example, on one line."""
    return " ".join(_ANSWER_LABEL.sub("", reply[: answer_end(reply)]).split())


def parse_confidence(reply: str) -> float | None:
    """The first number in ``reply`` as a probability in [0, 1], or None.

    "85" and "85%" are percentages; "0.85" (a fraction below 1 written with a
    decimal point) is already a probability; "8/10" and "8 out of 10" are
    ratios. A number that lands outside [0, 1] on its scale is not a
    confidence, and reading stops there rather than guessing.
    """
    match = _NUMBER.search(reply)
    if match is None:
        return None
    number, unit, over, out_of = match.groups()
    value = float(number)
    denominator = over or out_of
    if denominator:
        value = value / float(denominator) if float(denominator) else -1.0
    elif unit or not ("." in number and value <= 1.0):
        value /= 100.0
    return value if 0.0 <= value <= 1.0 else None
