"""One clause read against a frame: where the relation is, whose relation it is, and what fills it.

The same reading serves the evidence and the claim being checked. A clause
relates the frame when its sentence holds every relation word (by stem) and
the clause one of them; a superlative under an ordinal ("the second largest")
is another relation. The relation belongs to whatever the clause attaches it
to: "the capital of Tasmania", "Tasmania's capital", "its capital" (the text's
topic). What fills it depends on the clause's shape, read from the copula
nearest the relation:

* "Canberra is the capital of Australia": the relation follows the copula, so
  the filler is the clause's subject, before it; every name there is the same
  thing under another name ("Seoul, officially Seoul Special Metropolitan
  City, is ..."); a pronoun there ("he was the first ...") is the topic;
* "Its capital and largest city is Algiers": the relation precedes the
  copula, so the filler is the first mention after it;
* "a tragedy written by William Shakespeare", "a novel by Herman Melville"
  (for a question "Who wrote ...?"): the first mention after "by";
* otherwise: the mention nearest to the relation words, within
  ``MAX_DISTANCE`` words.

Clauses that deny ("is not") and, for a question in the present tense, those
that speak of another time ("was the capital until 2005", "the former
capital", "the future capital") answer nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ..factcheck.text import STOPWORDS
from .frame import Frame
from .mentions import Mention, MentionKind, mentions
from .words import Word

__all__ = ["MAX_DISTANCE", "ClauseReading", "Fill", "Shape", "compatible", "read_clause"]

MAX_DISTANCE = 10  # words between a mention and the nearest relation word, beyond which it fills nothing
OWNER_REACH = 8  # words after the relation in which "of X" / "in X" says whose relation it is
COPULAS = frozenset({"is", "are", "was", "were", "remains", "became", "becomes"})
OTHER_TIMES = frozenset(
    {"former", "formerly", "until", "previously", "once", "was", "were", "old", "then", "ancient", "future", "historic"}
)
NEGATIONS = frozenset({"not", "never", "no", "neither", "nor", "nothing", "none"})
POSSESSIVE_PRONOUNS = frozenset({"its", "his", "her", "their"})
SUBJECT_PRONOUNS = frozenset({"it", "he", "she", "they"})
OWNER_LINKS = frozenset({"of", "in"})
PREPOSITIONS = frozenset({"in", "of", "on", "at", "from", "by", "with", "for", "to", "near", "into"})
# At most this many words between a copula and the relation it predicates ("is also the capital", "is the
# capital"); beyond, or across a comma, the clause predicates something else ("It is a part of X, south of the
# national capital Delhi").
PREDICATE_GAP = 6
ORDINALS = frozenset(
    "second third fourth fifth sixth seventh eighth ninth tenth 2nd 3rd 4th 5th 6th 7th 8th 9th 10th".split()
)

# Verbs of making, whose agent is the maker whatever the question's verb ("an art composition created by").
CREATION_STEMS = frozenset({"creat", "made", "make", "produc", "author"})

# How the clause says what fills the relation (see the module docstring).
Shape = Literal["agent", "subject", "complement", "near"]


def compatible(kind: MentionKind, wanted: MentionKind) -> bool:
    """Whether a mention of ``kind`` can stand where the answer's entity, of ``wanted`` kind, stands."""
    if wanted in {"year", "number"}:
        return kind in {"year", "number"}
    return kind == wanted or {kind, wanted} == {"name", "term"}


@dataclass(frozen=True)
class Fill:
    """What fills the relation in a clause: the mention and the other names it goes by there, its distance from
    the relation, and whether the clause's shape says so firmly."""

    group: tuple[Mention, ...]
    distance: int
    firm: bool


@dataclass(frozen=True)
class ClauseReading:
    """A clause that holds the frame's relation: its words, where the relation is and whose it is."""

    words: Sequence[Word]
    relation: tuple[int, ...]  # the positions of the relation's words
    # Every relation word is in the clause, those the question says together together (or it says "by" the agent)
    complete: bool
    owners: tuple[Mention, ...]  # the names the relation is attached to ("the capital of Tasmania")
    owned_by_pronoun: bool  # "its capital", "the nation's capital": the relation of what the text speaks of
    speaks_of_other_time: bool
    denied: bool
    shape: Shape
    copula: int | None  # the copula the shape was read from
    agent: int | None  # where "by" introduces the agent of an agentive frame's relation ("written by X")

    @property
    def pronoun_subject(self) -> bool:
        """ "It is also the capital of ...", "he was the first ...": the filler is what the text speaks of."""
        if self.shape != "subject" or self.copula is None:
            return False
        return self.copula > 0 and self.words[self.copula - 1].folded in SUBJECT_PRONOUNS

    def occurrences(self, forms: Sequence[str]) -> list[tuple[int, int]]:
        """Where any of ``forms`` (folded phrases) is named as a whole name, not inside a longer one."""
        folded = [w.folded for w in self.words]
        found = []
        for form in forms:
            phrase = form.split()
            for start in range(len(folded) - len(phrase) + 1):
                end = start + len(phrase) - 1
                if folded[start : end + 1] == phrase and not _inside_longer_name(self.words, start, end):
                    found.append((start, end))
        return found

    def fill(self, candidates: Sequence[Mention]) -> Fill | None:
        """What fills the relation among ``candidates``; None when nothing does."""
        usable = [m for m in candidates if not _overlaps(m, self.relation) and m not in self.owners]
        firm = True
        if self.shape == "agent" and self.agent is not None:
            group = self._first_after(usable, self.agent)
        elif self.shape == "subject" and self.copula is not None:
            group = self._subject_names(usable, self.copula)
            if not group:  # only the subject before the copula: what follows the relation ("a war that ended in
                # 1945"), a reading too loose to contradict with
                group, firm = self._first_after(usable, max(self.relation)), False
        elif self.shape == "complement" and self.copula is not None:
            group = self._first_after(usable, self.copula)
        else:
            group = sorted(usable, key=lambda m: (self.distance(m), m.first))[:1]
        if not group or (self.shape != "subject" and self.distance(group[0]) > MAX_DISTANCE):
            return None
        return Fill(tuple(group), self.distance(group[0]), firm)

    def _subject_names(self, mentions: Sequence[Mention], copula: int) -> list[Mention]:
        """The clause's subject and the other names it is given before the copula ("Seoul, officially Seoul
        Special Metropolitan City, is"), not names inside its description ("Moscow, the largest city in Europe,")."""
        return [
            m
            for m in mentions
            if m.last < copula and not (m.first > 0 and self.words[m.first - 1].folded in PREPOSITIONS)
        ]

    def nearest_to(self, subject: Sequence[tuple[int, int]]) -> ClauseReading:
        """The reading with only the occurrence of each relation word nearest the named subject: "south-east of
        the national capital Delhi and west of the state capital Lucknow" relates Delhi to the first."""
        if len(self.relation) < 2 or not subject:
            return self
        by_stem: dict[str, list[int]] = {}
        for position in self.relation:
            by_stem.setdefault(self.words[position].stem, []).append(position)
        nearest = [min(found, key=lambda r: min(abs(r - start) for start, _ in subject)) for found in by_stem.values()]
        return replace(self, relation=tuple(sorted(nearest)))

    def _first_after(self, mentions: Sequence[Mention], position: int) -> list[Mention]:
        """The first mention after ``position``, passing over one that qualifies a noun after it ("the
        Netherlandish master Hieronymus Bosch", "the Italian diplomat Niccolò Machiavelli") and over common nouns
        where a name follows ("the author Leo Tolstoy")."""
        after = [m for m in mentions if m.first > position and self.distance(m) <= MAX_DISTANCE]
        heads = [m for m in after if not self._qualifies(m) and not self._adjectives(m)] or after
        return ([m for m in heads if m.kind != "term"] or heads)[:1]

    def _adjectives(self, mention: Mention) -> bool:
        """ "the Russian and American novelist Vladimir Nabokov": words that describe, not name."""
        return mention.kind == "name" and all(w.adjective for w in self.words[mention.first : mention.last + 1])

    def _qualifies(self, mention: Mention) -> bool:
        """A name before a common noun ("Netherlandish master"); a number before one is counting it."""
        following = self.words[mention.last + 1] if mention.last + 1 < len(self.words) else None
        return (
            mention.kind == "name"
            and following is not None
            and following.text.isalpha()
            and following.text.islower()
            and following.folded not in STOPWORDS
        )

    def distance(self, mention: Mention) -> int:
        """Words from the relation (from "by", for an agent) to the mention."""
        anchors = (self.agent,) if self.shape == "agent" and self.agent is not None else self.relation
        return min(mention.first - r if mention.first > r else max(0, r - mention.last) for r in anchors)


def _overlaps(mention: Mention, positions: Sequence[int]) -> bool:
    return any(mention.first <= p <= mention.last for p in positions)


def _inside_longer_name(clause: Sequence[Word], start: int, end: int) -> bool:
    """ "Australia" in "South Australia" or "the Northern Territory of Australia" is not Australia."""
    before = clause[start - 1] if start > 0 else None
    after = clause[end + 1] if end + 1 < len(clause) else None
    capital_before = before is not None and before.capitalised and before.folded not in STOPWORDS
    linked_before = before is not None and before.folded in {"of", "de"} and start > 1 and clause[start - 2].capitalised
    capital_after = after is not None and after.capitalised and after.folded not in STOPWORDS
    return capital_before or linked_before or capital_after


def _owners(clause: Sequence[Word], relation: Sequence[int], names: Sequence[Mention]) -> tuple[Mention, ...]:
    """The names the relation is said of: "X's <relation>" just before it, "<relation> of (the) X" after it."""
    found = []
    first = min(relation)
    for name in names:
        after = clause[name.last + 1].folded if name.last + 1 < len(clause) else ""
        if after == "'s" and 0 < first - name.last <= 4:
            found.append(name)
            continue
        link = name.first - 1
        if link > 0 and clause[link].folded == "the":
            link -= 1
        linked = link >= 0 and clause[link].folded in OWNER_LINKS
        if linked and any(0 < name.first - r <= OWNER_REACH and _attached(clause, r, name.first) for r in relation):
            found.append(name)
    return tuple(found)


def _attached(clause: Sequence[Word], relation: int, owner: int) -> bool:
    """Whether the words between the relation and a name after it keep them in one noun phrase ("capital and
    largest city of Georgia", "capital of the canton of Zurich"), rather than another's ("ended in 1945 with the
    surrender of Japan"): no number, no punctuation, no function word but "the", "and", "of" and "in"."""
    for word in clause[relation + 1 : owner]:
        if word.is_number or word.is_punctuation:
            return False
        if word.folded in STOPWORDS and word.folded not in {"the", "a", "an", "and"} | OWNER_LINKS:
            return False
    return True


def _owned_by_pronoun(clause: Sequence[Word], relation: Sequence[int]) -> bool:
    first = min(relation)
    before = clause[max(0, first - 3) : first]
    pronoun = any(w.folded in POSSESSIVE_PRONOUNS for w in before)
    lower_possessive = any(
        w.folded == "'s" and k > 0 and not before[k - 1].capitalised for k, w in enumerate(before)
    )  # "the nation's capital"
    return pronoun or lower_possessive


def _other_time(clause: Sequence[Word], relation: Sequence[int], copula: int | None) -> bool:
    """Whether the clause speaks of another time than the present. A mark in the subject, before the copula and
    away from the relation, is about a name ("Lanzhou, formerly Lanchow, is the capital"), not the relation."""
    for index, word in enumerate(clause):
        if word.folded not in OTHER_TIMES:
            continue
        naming = copula is not None and index < copula and all(r > copula for r in relation)
        if not naming or any(0 < r - index <= 3 for r in relation):
            return True
    return False


def _shape(clause: Sequence[Word], relation: Sequence[int], agent: int | None) -> tuple[Shape, int | None]:
    """The clause's shape and its copula: the first one after the relation, or the last one before it, whichever
    is nearer ("the freezing point is 0 and the boiling point is 100": the second)."""
    if agent is not None:
        return "agent", None
    copulas = [i for i, w in enumerate(clause) if w.folded in COPULAS]
    after = next((i for i in copulas if i > max(relation)), None)
    before = next((i for i in reversed(copulas) if i < min(relation)), None)
    if after is not None and (before is None or after - max(relation) <= min(relation) - before):
        return "complement", after
    if before is not None and _predicates(clause, before, min(relation)):
        return "subject", before
    return "near", None


def _predicates(clause: Sequence[Word], copula: int, relation: int) -> bool:
    gap = clause[copula + 1 : relation]
    return len(gap) <= PREDICATE_GAP and not any(w.is_punctuation for w in gap)


def _contiguous(stems: Sequence[str], runs: Sequence[Sequence[str]]) -> bool:
    """Whether each run of relation words stands together in the clause, as in the question, or the clause holds
    only its last word, the others being elsewhere in the sentence ("Iron is a chemical element; it has symbol
    Fe"), but not the run's words apart ("the longest east-flowing river")."""
    for run in runs:
        together = any(tuple(stems[i : i + len(run)]) == tuple(run) for i in range(len(stems) - len(run) + 1))
        head_alone = run[-1] in stems and not set(run[:-1]) & set(stems)
        if not (together or head_alone):
            return False
    return True


def _agent(clause: Sequence[Word]) -> int | None:
    """Where "by" may name an agent: the first "by" after the clause's first copula ("..., usually referred to by
    its short title, is a book by Adam Smith"), else the first one."""
    copula = next((i for i, w in enumerate(clause) if w.folded in COPULAS), -1)
    found = [i for i, w in enumerate(clause) if w.folded == "by"]
    return next((i for i in found if i > copula), found[0] if found else None)


def _says_agent(clause: Sequence[Word], stems: Sequence[str], frame: Frame, agent: int | None) -> bool:
    """Whether "by" gives the agent of the asked relation: after the relation's verb ("written by") or a verb of
    making ("created by"), or after a copula and a noun ("is a novel by"), not after another verb ("are
    synthesised by")."""
    if agent is None:
        return False
    for index in range(agent - 1, -1, -1):  # the nearest verb before "by", or the copula
        if stems[index] in frame.relation_stems or stems[index] in CREATION_STEMS:
            return True
        if clause[index].folded in COPULAS:
            return True  # "is a novel by"
        if clause[index].folded.endswith(("ed", "en")):
            return False  # "is challenged by", "are synthesised by"
    return False


def _relation(clause: Sequence[Word], frame: Frame) -> tuple[int, ...]:
    """The positions of the relation's words, but not a superlative under an ordinal the question does not say
    ("the second largest" is not "the largest")."""
    return tuple(
        i
        for i, w in enumerate(clause)
        if w.stem in frame.relation_stems
        and not (i > 0 and clause[i - 1].folded in ORDINALS and clause[i - 1].folded not in frame.question_words)
    )


def read_clause(clause: Sequence[Word], frame: Frame, sentence_stems: Collection[str]) -> ClauseReading | None:
    """The clause read against ``frame``; None unless its sentence (``sentence_stems``) holds every word of the
    relation and the clause one of them, or, for an agentive frame, the clause says "by"."""
    stems = [w.stem for w in clause]
    agent = _agent(clause) if frame.agentive else None
    relation = _relation(clause, frame)
    if relation and set(frame.relation_stems) <= set(sentence_stems):
        agent = None if agent is not None and agent < min(relation) else agent
    elif agent is not None:
        relation = (agent,)
    else:
        return None
    folded = {w.folded for w in clause}
    names = [m for m in mentions(clause) if m.kind == "name" and not _overlaps(m, relation)]
    shape, copula = _shape(clause, relation, agent)
    return ClauseReading(
        words=clause,
        relation=relation,
        complete=_says_agent(clause, stems, frame, agent)
        if shape == "agent"
        else _contiguous(stems, frame.relation_runs),
        owners=_owners(clause, relation, names),
        owned_by_pronoun=_owned_by_pronoun(clause, relation),
        speaks_of_other_time=frame.present and _other_time(clause, relation, copula),
        denied=bool(folded & NEGATIONS) or any(f.endswith("n't") for f in folded),
        shape=shape,
        copula=copula,
        agent=agent,
    )
