"""How far a sampled answer agrees with the original: a cheap lexical similarity in [0, 1]. Pure functions.

No paraphrase or entailment model is packaged, so agreement is measured on
content words, tokenised as Trust_FC's retrieval does (``factcheck.text.tokenize``:
case and accents folded, stop words dropped, plurals folded), so "The capital
of France is Paris." and "paris" share their one content word that matters.

* **Token F1** (SQuAD's answer F1 over the two bags of content words) is the
  measure for every pair: symmetric, bounded, 1 only for the same words.
* **Short answers** (an original of at most ``short_words`` content words)
  also count **containment**: the share of the shorter side's words found in
  the longer one, and the pair scores the larger of the two. A short answer
  restated in a sentence ("Paris" / "Paris is the capital of France, on the
  Seine") then agrees fully, where F1 alone would call it a partial match.
* **Long answers** use F1 alone: containment would let a short sample that
  names one word of a long original count as full agreement.
* Words of the **question** are left out of both answers first ("Paris is the
  capital of France" and "Lyon is the capital of France" disagree on the one
  word that answers "What is the capital of France?"); when that leaves an
  answer no word, its words are kept as they are.
* An answer with no content word at all ("Yes." is one; "No." has none: "no"
  is a stop word) is compared by its normalised text: equal or not.

Each side is cut at ``MAX_TOKENS`` content words, so one comparison costs
O(n) on bounded input whatever the answers' length.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

from ..factcheck.text import tokenize

__all__ = ["MAX_TOKENS", "Agreement", "agreement", "token_f1"]

MAX_TOKENS = 512


@dataclass(frozen=True)
class Agreement:
    value: float
    kind: Literal["short", "long", "empty"]


def token_f1(original: Counter[str], sample: Counter[str]) -> float:
    """SQuAD's F1 of two bags of tokens (0 when they share none)."""
    overlap = sum((original & sample).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / sum(sample.values()), overlap / sum(original.values())
    return 2 * precision * recall / (precision + recall)


def _folded(text: str) -> str:
    return " ".join("".join(c for c in text.casefold() if c.isalnum() or c.isspace()).split())


def _answer_words(text: str, asked: frozenset[str]) -> Counter[str]:
    words = tokenize(text)[:MAX_TOKENS]
    return Counter([word for word in words if word not in asked] or words)


def agreement(original: str, sample: str, *, question: str = "", short_words: int = 5) -> Agreement:
    """The agreement of ``sample`` with ``original`` (see the module's docstring for the rules)."""
    asked = frozenset(tokenize(question)[:MAX_TOKENS])
    a, b = _answer_words(original, asked), _answer_words(sample, asked)
    if not a or not b:
        same = not a and not b and _folded(original) == _folded(sample)
        return Agreement(1.0 if same else 0.0, "empty")
    f1 = token_f1(a, b)
    if len(a) > short_words:
        return Agreement(f1, "long")
    shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
    contained = sum(1 for word in shorter if word in longer) / len(shorter)
    return Agreement(max(f1, contained), "short")
