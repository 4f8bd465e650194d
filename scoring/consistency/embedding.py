"""The second and third sources of substitutes: embedding neighbours and same-POS vocabulary words.

Neighbours follow the paper's ``find_candidates_by_embedding``: the words
nearest (by cosine) to the mean vector of the words being replaced. Three kinds
of neighbour would make an unfair or useless option and are dropped:
near-synonyms (cosine >= 0.9), neighbours that contain the original or are
contained in it ("states" for "state"), and near-duplicates of the original or
of each other (same stem, or nearly the same spelling). A neighbour whose tags
the vocabulary knows must fit the original's (``tag_fits``).

Random words (``find_candidate_by_pos``) come from the vocabulary tagged at
build time: the same fine tag (VBD for "built") when it has enough words, the
coarse class otherwise.
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gensim.models import KeyedVectors
from spacy.lang.en.stop_words import STOP_WORDS

__all__ = [
    "Vocabulary",
    "WordEmbeddings",
    "WordSet",
    "coarse_pos",
    "near_duplicate",
    "read_vocabulary",
    "same_word",
    "stem",
    "tag_fits",
]

MAX_SIMILARITY = 0.9
MIN_SIMILARITY = 0.3  # below this a "neighbour" is unrelated: the random source's job, not this one's
SPELLING_RATIO = 0.8
MIN_RANDOM_COUNT = 5
_WORDLIKE = re.compile(r"^[A-Za-z][A-Za-z'-]*[A-Za-z]$")


def coarse_pos(tag: str) -> str:
    """Penn tag -> the class a substitute must share (NNP and NN differ: names replace names)."""
    if tag in ("NNP", "NNPS"):
        return "PROPN"
    for prefix, name in (("NN", "NOUN"), ("VB", "VERB"), ("JJ", "ADJ"), ("RB", "ADV")):
        if tag.startswith(prefix):
            return name
    return tag


def stem(word: str) -> str:
    """A crude suffix stripper: enough to see that "temples" and "temple" are one word."""
    word = word.lower()
    for suffix in ("'s", "ies", "es", "s", "ed", "ing", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def same_word(a: str, b: str) -> bool:
    """One contains the other ("state", "states") or they share a stem: cheap enough for every pair."""
    x, y = a.lower().strip(), b.lower().strip()
    return not x or not y or x in y or y in x or stem(x) == stem(y)


class WordSet:
    """Words kept so far, answering ``same_word`` against all of them without re-stemming each."""

    def __init__(self, words: Iterable[str] = ()) -> None:
        self._lowered: list[str] = []
        self._stems: set[str] = set()
        for word in words:
            self.add(word)

    def add(self, word: str) -> None:
        self._lowered.append(word.lower().strip())
        self._stems.add(stem(word.strip()))

    def clashes(self, word: str) -> bool:
        x = word.lower().strip()
        return not x or stem(x) in self._stems or any(x in y or y in x for y in self._lowered)


def near_duplicate(a: str, b: str) -> bool:
    """Same word for a reader: ``same_word``, or almost the same spelling ("Florida", "Floridas")."""
    if same_word(a, b):
        return True
    x, y = a.lower().strip(), b.lower().strip()
    if 2 * min(len(x), len(y)) < SPELLING_RATIO * (len(x) + len(y)):  # the ratio cannot reach it
        return False
    matcher = difflib.SequenceMatcher(None, x, y)
    return matcher.quick_ratio() >= SPELLING_RATIO and matcher.ratio() >= SPELLING_RATIO


def tag_fits(tags: Sequence[str], wanted: str) -> bool:
    """Can a word seen with ``tags`` stand where ``wanted`` stood? Names for names (NNP/NNPS),
    otherwise the same inflection: "built" (VBD) takes "founded", not "founding" or "temples"."""
    if coarse_pos(wanted) == "PROPN":
        return any(coarse_pos(t) == "PROPN" for t in tags)
    return wanted in tags


@dataclass
class Vocabulary:
    """Corpus words with the Penn tags they carry (most frequent first) and their counts."""

    tags: dict[str, tuple[str, ...]]
    counts: dict[str, int]
    by_tag: dict[str, list[str]] = field(default_factory=dict)
    by_coarse: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for word, tags in self.tags.items():
            if (
                self.counts.get(word, 0) >= MIN_RANDOM_COUNT
                and _WORDLIKE.match(word)
                and word.lower() not in STOP_WORDS
            ):
                for tag in tags:
                    self.by_tag.setdefault(tag, []).append(word)
                self.by_coarse.setdefault(coarse_pos(tags[0]), []).append(word)

    def count(self, word: str) -> int:
        return self.counts.get(word, 0) + (self.counts.get(word.lower(), 0) if word != word.lower() else 0)

    def random_words(self, tag: str, num: int, rng: random.Random, original: str) -> list[str]:
        """``num`` random words with ``tag`` (or its coarse class), none a near-duplicate of ``original``."""
        pool = self.by_tag.get(tag, [])
        if len(pool) < 10 * num:
            pool = self.by_coarse.get(coarse_pos(tag), pool)
        picked: list[str] = []
        kept = WordSet()
        for word in rng.sample(pool, min(len(pool), 4 * num)):
            if not near_duplicate(word, original) and not kept.clashes(word):
                picked.append(word)
                kept.add(word)
            if len(picked) == num:
                break
        return picked


def read_vocabulary(path: Path) -> Vocabulary:
    """``word<TAB>tag,tag...<TAB>count`` lines, as ``vectors_build.write_vocabulary`` writes them."""
    tags: dict[str, tuple[str, ...]] = {}
    counts: dict[str, int] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            word, word_tags, count = line.rstrip("\n").split("\t")
            tags[word], counts[word] = tuple(word_tags.split(",")), int(count)
    return Vocabulary(tags, counts)


class WordEmbeddings:
    """Nearest words by cosine in a KeyedVectors model, filtered into usable substitutes."""

    def __init__(self, vectors: KeyedVectors, vocabulary: Vocabulary) -> None:
        vectors.fill_norms()  # once, here: most_similar would otherwise do it on the first request
        self._vectors = vectors
        self.vocabulary = vocabulary

    def _known(self, word: str) -> str | None:
        for form in (word, word.lower(), word.capitalize()):
            if form in self._vectors.key_to_index:
                return form
        return None

    def has(self, word: str) -> bool:
        return self._known(word) is not None

    def nearest(self, words: Sequence[str], topn: int) -> list[tuple[str, float]]:
        """The ``topn`` words nearest the mean of ``words``' vectors, unfiltered (empty if none known)."""
        keys = [k for k in (self._known(w) for w in words) if k]
        return self._vectors.most_similar(positive=keys, topn=topn) if keys else []

    def neighbours(self, words: Sequence[str], tag: str, num: int, original: str) -> list[str]:
        """Up to ``num`` substitutes for ``original`` (made of ``words``), nearest first."""
        picked: list[str] = []
        kept = WordSet(original.split())
        for word, similarity in self.nearest(words, max(50, 4 * num)):
            if similarity < MIN_SIMILARITY:
                break
            if similarity >= MAX_SIMILARITY or not _WORDLIKE.match(word) or word.lower() in STOP_WORDS:
                continue
            known = self.vocabulary.tags.get(word)
            if known is not None and not tag_fits(known, tag):
                continue
            if near_duplicate(word, original) or kept.clashes(word):
                continue
            picked.append(word)
            kept.add(word)
            if len(picked) == num:
                break
        return picked
