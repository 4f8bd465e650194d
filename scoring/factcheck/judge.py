"""The entailment judge: the paper's Table 6 prompt, and what its reply means. Pure functions.

The judge is an LLM reached through ``Ask``; this module only writes the
prompt and reads the reply, so every rule here is tested without a model.
Replies are messy ("Supported.", "B) contradict", "The evidence does not
support..."): the label is the first label word that is not negated, and a
reply with none is "neutral", the paper's label for evidence that settles
nothing. When the reply starts with a label token and carries its
log-probabilities, the alternatives at that token give each label's
probability, which makes Trust_FC graded rather than three-valued.

The constrained-choice judge (``judge_procedure: choice``) does not wait for a
weak judge to write a label: it asks the same question as a yes/no choice
(Table 6's instruction and inputs, then "Does the evidence support the
answer? Reply yes or no.") and reads the probabilities of the answer tokens
where the reply starts, whatever the reply goes on to say: "yes" is support,
"no" contradict. Like the MCQ letters, those tokens carry the judge's habit
(SmolLM2 says "no" to almost anything), so they are debiased by the judge's
answer to a content-free probe (every input "N/A"): each label's probability
is divided by its probability there and renormalised (contextual calibration).
When no answer token is among the alternatives, the reply's words decide.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import cast

from ..types import FactLabel
from .evidence import Evidence

__all__ = [
    "CONTENT_FREE",
    "JUDGE_MAX_TOKENS",
    "LABELS",
    "LABEL_VALUES",
    "Label",
    "choice_probabilities",
    "choice_prompt",
    "choice_reply_label",
    "debiased",
    "evidence_lines",
    "judge_prompt",
    "label_probabilities",
    "label_value",
    "parse_judge_label",
]

Label = FactLabel
LABELS: tuple[Label, ...] = ("support", "contradict", "neutral")
JUDGE_MAX_TOKENS = 16  # the label, and room for a judge that words it as a sentence
LABEL_VALUES: dict[Label, float] = {"support": 1.0, "neutral": 0.5, "contradict": 0.0}

# Table 6 of the paper, word for word; only the placeholders are filled in.
PROMPT = (
    "INSTRUCTION: Assess whether the provided evidence aligns with or contradicts the given question-answer "
    "pair, and categorize the relationship as either 'support', 'contradict', or 'neutral'.\n"
    "Evidence: {evidence}\n"
    "Question: {question}\n"
    "Answer: {answer}\n"
    "Relation:"
)

_LABEL_WORD = re.compile(
    r"\b(unsupported|support\w*|entail\w*|confirm\w*|consistent|align\w*|agree(?:s|d|ment)?|inconsistent"
    r"|contradict\w*|refut\w*|disagree(?:s|d|ment)?|neutral\w*|neither|insufficient|irrelevant|unrelated)\b"
)
# A weak judge may repeat the instruction, whole or in part; its "aligns with or contradicts" and its list
# of the three labels name several labels at once, so an echo of either is no answer.
_INSTRUCTION_ECHO = re.compile(
    r"align\w*\s+with\s+or\s+contradict\w*"
    r"|(?:either\s+)?\W*support\W*,?\s*\W*contradict\W*,?\s*(?:or\s+)?\W*neutral\b"
)
CHOICE_QUESTION = "Does the evidence support the answer? Reply yes or no.\nReply:"
CONTENT_FREE = "N/A"  # every input of the probe that measures the judge's habit
_CHOICE_WORDS: dict[str, Label] = {"yes": "support", "no": "contradict"}
_PRIOR_FLOOR = 1e-3  # a label the probe never gave is not divided by zero
_NEGATION = re.compile(r"\b(not|no|never|cannot|nor|without)\b|n't\b")
_NEGATION_REACH = 24  # characters before a label word in which a negation applies to it ...
_CLAUSE_BREAK = re.compile(r"[,.;:!?()\n]")  # ... unless punctuation ends the negation's clause first
_LETTERS = re.compile(r"[^a-z]")


def judge_prompt(evidence: Sequence[Evidence], question: str, answer: str) -> str:
    """Table 6 with the passages as evidence, one per line, each led by its title."""
    return PROMPT.format(evidence=evidence_lines(evidence), question=question, answer=answer)


def evidence_lines(evidence: Sequence[Evidence]) -> str:
    """The passages one per line, each led by its title."""
    return "\n".join(e.text if e.text.lower().startswith(e.title.lower()) else f"{e.title}: {e.text}" for e in evidence)


def choice_prompt(evidence: str, question: str, answer: str) -> str:
    """Table 6's instruction and inputs, asked as a yes/no choice (``evidence``: the passages, one per line)."""
    head = PROMPT.removesuffix("Relation:").format(evidence=evidence, question=question, answer=answer)
    return head + CHOICE_QUESTION


def choice_probabilities(top_logprobs: Sequence[dict[str, float]] | None) -> dict[Label, float] | None:
    """support / contradict probabilities from the "yes" / "no" tokens among the reply's first alternatives.

    None without log-probabilities, or when neither token is among them.
    """
    first = next((alternatives for alternatives in top_logprobs or () if alternatives), None)
    if first is None:
        return None
    mass = dict.fromkeys(LABELS, 0.0)
    for token, logprob in first.items():
        label = _CHOICE_WORDS.get(_LETTERS.sub("", token.lower()))
        if label is not None:
            mass[label] += math.exp(logprob)
    total = sum(mass.values())
    return cast(dict[Label, float], {name: mass[name] / total for name in LABELS}) if total > 0 else None


def debiased(probabilities: dict[Label, float], prior: dict[Label, float] | None) -> dict[Label, float]:
    """Each label's probability over its probability under the content-free ``prior``, renormalised."""
    if prior is None:
        return probabilities
    ratios = {name: p / max(prior.get(name, 0.0), _PRIOR_FLOOR) if p > 0 else 0.0 for name, p in probabilities.items()}
    total = sum(ratios.values())
    return cast(dict[Label, float], {name: r / total for name, r in ratios.items()}) if total > 0 else probabilities


def choice_reply_label(reply: str) -> Label:
    """The fallback reading of a yes/no reply: a leading "yes"/"no", else the label words of ``parse_judge_label``."""
    first = _LETTERS.sub("", (reply.strip().split() or [""])[0].lower())
    return _CHOICE_WORDS.get(first) or parse_judge_label(reply)


def _word_label(word: str) -> Label:
    if word.startswith(("support", "entail", "confirm", "consistent", "align", "agree")):
        return "support"
    if word.startswith(("contradict", "refut", "inconsistent", "disagree")):
        return "contradict"
    return "neutral"


def parse_judge_label(reply: str) -> Label:
    """The first label word of ``reply`` that no "not"/"n't"/"no" just before negates; else "neutral".

    A negated label ("does not support") says the evidence does not settle the
    answer, which is the paper's "neutral", so it is skipped rather than flipped.
    Table 6's own verb counts: "the evidence aligns with the answer" is support.
    """
    text = _INSTRUCTION_ECHO.sub(" ", reply.lower())
    for match in _LABEL_WORD.finditer(text):
        before = _CLAUSE_BREAK.split(text[max(0, match.start() - _NEGATION_REACH) : match.start()])[-1]
        if match.group(1) == "unsupported" or _NEGATION.search(before):
            continue
        return _word_label(match.group(1))
    return "neutral"


def _token_label(token: str) -> Label | None:
    """The label a token starts or abbreviates ("Support", " contr", "neutral"); None for other tokens."""
    word = _LETTERS.sub("", token.lower())
    if len(word) < 3:
        return None
    for label in LABELS:
        if label.startswith(word) or word.startswith(label):
            return label
    return None


def _favourite(alternatives: dict[str, float]) -> str:
    return max(alternatives, key=alternatives.__getitem__)


def label_probabilities(top_logprobs: Sequence[dict[str, float]] | None, label: Label) -> dict[Label, float] | None:
    """Each label's probability from the alternatives of the reply's first word token.

    Only when the reply opens with a label token: its alternatives are then the
    judge's own distribution over the answer it was asked for. The mass of the
    alternatives naming each label is summed and normalised over the three
    labels. None when there are no log-probabilities, when the first word is
    not a label, or when the distribution's favourite disagrees with the
    parsed ``label`` (a token such as "Con" can begin "consistent").
    """
    first = next(
        (
            alternatives
            for alternatives in top_logprobs or ()
            if alternatives and _LETTERS.sub("", _favourite(alternatives).lower())
        ),
        None,
    )
    if first is None or _token_label(_favourite(first)) is None:
        return None
    mass = dict.fromkeys(LABELS, 0.0)
    for token, logprob in first.items():
        token_label = _token_label(token)
        if token_label is not None:
            mass[token_label] += math.exp(logprob)
    total = sum(mass.values())
    probabilities = cast(dict[Label, float], {name: mass[name] / total for name in LABELS})
    return probabilities if max(probabilities, key=probabilities.__getitem__) == label else None


def label_value(label: Label, probabilities: dict[Label, float] | None = None) -> float:
    """Trust_FC: support 1, neutral 0.5, contradict 0, or its expectation under ``probabilities``."""
    if probabilities is None:
        return LABEL_VALUES[label]
    return sum(LABEL_VALUES[name] * p for name, p in probabilities.items())
