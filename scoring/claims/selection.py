"""Which claims an answer is checked by: all of a long answer's up to ``max_claims``, or the answer whole.

A short answer (fewer than ``min_words`` words), or one whose split finds at most one claim, is one claim:
the whole answer, checked exactly as an answer without claims is (its span the answer less its surrounding
blanks). Beyond ``max_claims``, the claims that say the most (``Claim.weight``; the earlier on a tie) are
checked and the rest are kept, unselected, so that the record still shows where they stand. Pure functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..types import Claim

__all__ = ["is_short", "select_claims", "whole_answer"]


def is_short(answer: str, min_words: int) -> bool:
    return len(answer.split()) < min_words


def whole_answer(answer: str) -> Claim:
    """The answer as its one claim: its span without the blanks around it, checked as the answer itself."""
    start = len(answer) - len(answer.lstrip())
    end = len(answer.rstrip())
    return Claim(start, max(start, end), answer[start:end], answer)


def select_claims(answer: str, found: Sequence[Claim], max_claims: int) -> list[Claim]:
    """The claims to record: the answer whole when fewer than two were found, else the heaviest
    ``max_claims`` selected (the rest marked unselected), in answer order."""
    if len(found) < 2:
        return [whole_answer(answer)]
    ranked = sorted(range(len(found)), key=lambda index: (-found[index].weight, index))
    kept = set(ranked[:max_claims])
    return [dataclasses.replace(claim, selected=index in kept) for index, claim in enumerate(found)]
