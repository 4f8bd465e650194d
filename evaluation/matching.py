"""Gold-answer matching: the correctness label when no human judged the answer. Pure functions.

Closed-book answers are sentences ("Rudolf Hess was the last inmate of ..."), so
exact match alone labels nearly every answer wrong. An answer counts as correct
when, after SQuAD-style normalisation (lower case, punctuation and articles
dropped, whitespace collapsed), it equals a gold answer or contains one as a
whole-word run. This is a proxy: it misses paraphrases ("1997-1998 season" for
"1997–98") and accepts an answer that names the gold one among others, which is
why reports say which labels came from matching and how often matching agrees
with human labels where both exist. A gold answer that the question itself
contains ("What is the capital of Lamphun?" -> "Lamphun") must be matched
exactly: an answer that merely restates the question contains it too. Gold
answers taken from Wikipedia or Freebase titles carry qualifiers in
parentheses ("Orion (constellation)"); the name without them counts as well.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

__all__ = ["gold_match", "normalise_answer"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_QUALIFIER = re.compile(r"\s*\([^)]*\)")


def _is_punctuation(char: str) -> bool:
    return unicodedata.category(char).startswith(("P", "S"))


def normalise_answer(text: str) -> str:
    """Case folded (ß is ss), accents dropped, punctuation to spaces, articles removed, whitespace collapsed."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    kept = "".join(" " if _is_punctuation(c) else c for c in folded if not unicodedata.combining(c))
    return " ".join(_ARTICLES.sub(" ", kept).split())


def gold_match(answer: str, gold: Iterable[str], question: str = "") -> bool:
    """Whether ``answer`` equals, or contains as whole words, a non-empty normalised gold answer.

    Containment does not count for a gold answer found in ``question``.
    """
    said, asked = normalise_answer(answer), f" {normalise_answer(question)} "
    names = {form for g in gold for form in (g, _QUALIFIER.sub("", g))}
    for expected in filter(None, map(normalise_answer, names)):
        if said == expected or (f" {expected} " in f" {said} " and f" {expected} " not in asked):
            return True
    return False
