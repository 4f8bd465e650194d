"""Distractors: the answer with one word or entity substituted, drawn fresh for every check.

Changing a single span keeps each distractor one edit away from the answer, so
the model must know the fact to tell them apart (TrustScore, A.5.1). The
generator parses question and answer once, selects targets, collects
candidates, and returns a pool ordered for drawing: higher-priority sources
first, shuffled within a source. ``DistractorDeck`` hands each check three
distractors not shown before, and reuses old ones only when the pool runs out
(recorded, so a reader can tell).
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from spacy.language import Language

from ..types import Failure
from .selection import select_targets
from .substitution import SOURCE_TIER, Candidate, Source, SubstituteSources, find_candidates

__all__ = ["Distractor", "DistractorDeck", "DistractorGenerator", "DistractorPool", "realise"]


@dataclass(frozen=True)
class Distractor:
    text: str
    replaced: str
    substitute: str
    source: Source


@dataclass
class DistractorPool:
    answer: str
    distractors: list[Distractor]
    level: int
    errors: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    failures: list[Failure] = field(default_factory=list)

    def sources(self) -> dict[str, int]:
        return dict(Counter(d.source for d in self.distractors))


def _normalised(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".!")


def _cased(substitute: str, original: str, sentence_start: bool) -> str:
    """Match the original's casing: "jerusalem" -> "athens", sentence-initial "tomatoes" -> "Apples"."""
    if original.islower() and not substitute.islower():
        return substitute.lower()
    if sentence_start and original[:1].isupper():
        return substitute[:1].upper() + substitute[1:]
    return substitute


def realise(answer: str, candidate: Candidate) -> str:
    """The answer with the candidate's target span replaced."""
    target = candidate.target
    before = answer[: target.start]
    sentence_start = not before.strip() or before.rstrip()[-1] in ".!?"
    return before + _cased(candidate.text, target.text, sentence_start) + answer[target.end :]


class DistractorGenerator:
    """Parse, select, substitute: an answer's distractor pool. Shared by all requests of a process.

    The spaCy pipeline is not safe to call from several threads at once, so
    parsing takes a lock; look-ups in the sources run outside it.
    """

    def __init__(self, nlp: Language, sources: SubstituteSources) -> None:
        self._nlp = nlp
        self._sources = sources
        self._parse_lock = threading.Lock()

    @property
    def sources(self) -> SubstituteSources:
        return self._sources

    def generate(self, question: str, answer: str, num: int, rng: random.Random) -> DistractorPool:
        started = time.perf_counter()
        with self._parse_lock:
            question_doc, answer_doc = self._nlp.make_doc(question), self._nlp(answer)
        levels = select_targets(question_doc, answer_doc, self._sources.this_year)
        found = find_candidates(levels, num, self._sources, rng)
        by_tier: dict[int, list[Distractor]] = {}
        seen = {_normalised(answer)}
        for candidates in found.by_target.values():
            for candidate in candidates:
                text = realise(answer, candidate)
                if _normalised(text) not in seen:
                    seen.add(_normalised(text))
                    by_tier.setdefault(SOURCE_TIER[candidate.source], []).append(
                        Distractor(text, candidate.target.text, candidate.text, candidate.source)
                    )
        ordered: list[Distractor] = []
        for tier in sorted(by_tier):
            rng.shuffle(by_tier[tier])
            ordered += by_tier[tier]
        return DistractorPool(answer, ordered, found.level, found.errors, time.perf_counter() - started, found.failures)


class DistractorDeck:
    """Draws each check's distractors: unseen ones first, in pool order; old ones only when out."""

    def __init__(self, pool: Sequence[Distractor], rng: random.Random) -> None:
        self._pool = list(pool)
        self._next = 0
        self._rng = rng
        self.reused = False

    def draw(self, k: int) -> list[Distractor]:
        fresh = self._pool[self._next : self._next + k]
        self._next += len(fresh)
        if len(fresh) < k:
            shown = [d for d in self._pool[: self._next] if d not in fresh]
            extra = self._rng.sample(shown, min(len(shown), k - len(fresh)))
            self.reused = self.reused or bool(extra)
            fresh += extra
        return fresh
