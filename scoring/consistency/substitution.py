"""The paper's priority-based substitution (Algorithm 1): substitute candidates for the answer.

For the highest non-empty priority level of the answer's words
(``selection.py``), collect candidates from the sources in priority order,
going to a lower source only while fewer than ``num`` candidates exist:

* entities: same-type entities from the knowledge graph (dates and numbers:
  numeric neighbours instead), then embedding neighbours of the whole entity,
  then, for multi-word entities, the entity with its least frequent word
  replaced by that word's neighbours, then random words of the same POS;
* words: embedding neighbours (numbers: numeric neighbours), then random words
  of the same POS.

Level 3 takes verbs/adjectives first and adds entities and nouns also in the
question while candidates are short, as Algorithm 1 does. A failing source
(e.g. the SPARQL endpoint is down) is recorded and skipped, never raised.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..types import Failure
from .embedding import WordEmbeddings, WordSet, near_duplicate
from .knowledge import KnowledgeGraph, KnowledgeGraphError, compatible_with
from .numeric import numeric_substitutes
from .selection import TITLES, Levels, Target

__all__ = ["SOURCE_TIER", "Candidate", "CandidateSet", "Source", "SubstituteSources", "find_candidates", "link_forms"]

Source = Literal["numeric", "knowledge_graph", "embedding", "embedding_word", "pos_random"]
# Lower is better: the order in which distractors are drawn.
SOURCE_TIER: dict[str, int] = {"numeric": 1, "knowledge_graph": 1, "embedding": 2, "embedding_word": 2, "pos_random": 3}
LINKED_ENTITIES_TRIED = 2
# A long answer can name dozens of entities; each costs graph queries, and a few already give
# more candidates than ten checks can show. The first ones (in answer order) are used.
MAX_TARGETS = 6


@dataclass(frozen=True)
class Candidate:
    target: Target
    text: str  # replaces target.text in the answer
    source: Source


@dataclass
class SubstituteSources:
    """The collaborators each source needs; a missing one is a source with no candidates."""

    graph: KnowledgeGraph | None
    embeddings: WordEmbeddings | None
    this_year: int


@dataclass
class CandidateSet:
    """Algorithm 1's dictionary D: per target, its candidates in source order."""

    by_target: dict[Target, list[Candidate]] = field(default_factory=dict)
    level: int = 0  # the priority level used (1-4), 0 when the answer had nothing to replace
    errors: list[str] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)  # the errors' exceptions, for the log and the counter

    def count(self) -> int:
        return sum(len(c) for c in self.by_target.values())

    def add(self, target: Target, texts: Sequence[str], source: Source) -> None:
        """Append new candidates, skipping near-duplicates of the original and repeats.

        Words repeat when they share a stem or one contains the other; graph
        entities only when spelled the same ("Charles I" and "Charles II" are
        both kings); numbers only when equal (1983 and 1984 are different years).
        """
        existing = self.by_target.setdefault(target, [])
        exact = {c.text.lower() for c in existing}
        words = WordSet(c.text for c in existing)
        for text in texts:
            if source != "numeric" and near_duplicate(text, target.text):
                continue
            repeated = text.lower() in exact if source in ("numeric", "knowledge_graph") else words.clashes(text)
            if not repeated:
                existing.append(Candidate(target, text, source))
                exact.add(text.lower())
                words.add(text)

    def merge(self, other: CandidateSet) -> None:
        for target, candidates in other.by_target.items():
            for source in dict.fromkeys(c.source for c in candidates):
                self.add(target, [c.text for c in candidates if c.source == source], source)
        self.errors += other.errors
        self.failures += other.failures

    def prune(self) -> None:
        self.by_target = {t: c for t, c in self.by_target.items() if c}


def link_forms(target: Target) -> list[str]:
    """Surface forms to look up, most faithful first: as written, without "the" or a title, surname."""
    words = target.text.removesuffix("'s").removesuffix("’s").split()
    forms = [" ".join(words)]
    if len(words) > 1 and words[0].lower().rstrip(".") in TITLES:
        forms.append(" ".join(words[1:]))
    if len(words) > 1 and target.label == "PERSON":
        forms.append(words[-1])
    return [f for f in dict.fromkeys(forms) if f]


def _graph_candidates(
    target: Target, num: int, sources: SubstituteSources, rng: random.Random, found: CandidateSet
) -> None:
    if sources.graph is None or any(e.startswith("knowledge_graph") for e in found.errors):
        return  # after one failure (e.g. a timeout) the endpoint is not asked again for this answer
    try:
        linked = compatible_with(sources.graph.link(link_forms(target)), target.label)
        for entity in linked[:LINKED_ENTITIES_TRIED]:
            wanted = num - len(found.by_target.get(target, []))
            if wanted <= 0:
                break
            exclude = frozenset({target.text.lower(), entity.label.lower()})
            found.add(
                target, [c.label for c in sources.graph.same_type(entity, wanted, rng, exclude)], "knowledge_graph"
            )
    except KnowledgeGraphError as exc:
        found.errors.append(f"knowledge_graph: {exc}")
        found.failures.append(Failure("knowledge_graph", exc))


def _rare_word(target: Target, embeddings: WordEmbeddings) -> str | None:
    """The entity's least frequent word that has a vector (the paper's "non-high frequency word")."""
    known = [w for w in target.words if embeddings.has(w) and w.lower() not in TITLES]
    return min(known, key=lambda w: (embeddings.vocabulary.count(w), w)) if known else None


def _replace_word(text: str, word: str, replacement: str) -> str:
    return " ".join(replacement if w == word else w for w in text.split(" "))


def candidates_for_entities(
    entities: Sequence[Target], num: int, sources: SubstituteSources, rng: random.Random
) -> CandidateSet:
    found = CandidateSet()
    entities = entities[:MAX_TARGETS]
    plain = [e for e in entities if not e.numeric]
    for entity in entities:
        if entity.numeric:
            found.add(entity, numeric_substitutes(entity.text, rng, num, sources.this_year), "numeric")
        else:
            _graph_candidates(entity, num, sources, rng, found)
    embeddings = sources.embeddings
    if embeddings is not None and found.count() < num:
        for entity in plain:
            found.add(entity, embeddings.neighbours(entity.words, entity.tag, num, entity.text), "embedding")
    if embeddings is not None and found.count() < num:
        for entity in (e for e in plain if len(e.words) > 1):
            word = _rare_word(entity, embeddings)
            if word is not None:
                swaps = embeddings.neighbours([word], entity.tag, num, word)
                found.add(entity, [_replace_word(entity.text, word, s) for s in swaps], "embedding_word")
    if embeddings is not None and found.count() < num:
        for entity in plain:
            found.add(entity, embeddings.vocabulary.random_words(entity.tag, num, rng, entity.text), "pos_random")
    found.prune()
    return found


def candidates_for_words(
    words: Sequence[Target], num: int, sources: SubstituteSources, rng: random.Random
) -> CandidateSet:
    found = CandidateSet()
    words = words[:MAX_TARGETS]
    embeddings = sources.embeddings
    for word in words:
        if word.numeric:
            found.add(word, numeric_substitutes(word.text, rng, num, sources.this_year), "numeric")
        elif embeddings is not None:
            found.add(word, embeddings.neighbours(word.words, word.tag, num, word.text), "embedding")
    if embeddings is not None and found.count() < num:
        for word in (w for w in words if not w.numeric):
            found.add(word, embeddings.vocabulary.random_words(word.tag, num, rng, word.text), "pos_random")
    found.prune()
    return found


def find_candidates(levels: Levels, num: int, sources: SubstituteSources, rng: random.Random) -> CandidateSet:
    """Algorithm 1's ``Main``: candidates for the highest level that has words to replace."""

    def entities(group: Sequence[Target]) -> CandidateSet:
        return candidates_for_entities(group, num, sources, rng)

    def words(group: Sequence[Target]) -> CandidateSet:
        return candidates_for_words(group, num, sources, rng)

    if levels.ents_1:
        found = entities(levels.ents_1)
        found.level = 1
    elif levels.nncds_1:
        found = words(levels.nncds_1)
        found.level = 2
    elif levels.vbjjs_1 or levels.ents_2 or levels.nncds_2:
        found = words(levels.vbjjs_1) if levels.vbjjs_1 else CandidateSet()
        if found.count() < num and levels.ents_2:
            found.merge(entities(levels.ents_2))
        if found.count() < num and levels.nncds_2:
            found.merge(words(levels.nncds_2))
        found.level = 3
    elif levels.others:
        found = words(levels.others)
        found.level = 4
    else:
        found = CandidateSet()
    return found
