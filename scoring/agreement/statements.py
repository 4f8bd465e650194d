"""Statements in evidence that answer a frame: a clause that relates the subject, and what fills the relation.

A passage is read clause by clause (``clauses.read_clause``), each within its
sentence: the sentence must hold every word of the relation, the clause one of
them ("Iron is a chemical element; it has symbol Fe" answers "the chemical
symbol for iron"). A clause answers the frame when the relation is the subject's: the
subject is named in it (as a whole name: "Australia" is not in "South
Australia") and the relation is not said of another name ("the capital of
Tasmania"), or the passage is about the subject and the clause says "its
capital" or names no owner at all ("The capital and largest city is Accra"
in the article on Ghana).

A passage that opens with its title and aliases before a colon ("Yangon,
Rangoon: ...", as WordNet's glosses and many glossaries do) defines that
topic: its clauses describe the topic, which fills the relation they hold
("George Town: the capital of the Cayman Islands"). Any other passage's topic
is its title, where the text names it; it fills a clause that opens with "It"
("It is also the capital of the Littoral Region") and nothing nearer does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..factcheck.evidence import Evidence
from .clauses import ClauseReading, Fill, compatible, read_clause
from .frame import Frame
from .mentions import NAME_LINKS, Mention, MentionKind, mentions
from .words import Lexicon, fold, sentences, words

__all__ = ["Filler", "Statement", "Topic", "passage_topic", "statements"]

STRONG_DISTANCE = 6  # words between a firm statement's filler and its relation
MAX_HEAD_WORDS = 8  # of each form in a definition's head ("Canberra, Australian capital, capital of Australia")

_HEAD = re.compile(r"^\s*([^:;\"]{1,300}?):\s+")
_CLAUSE = re.compile(r";\s*|,?\s+(?:while|whereas|although|but)\s+|,\s+(?:and|which|who)\s+")
_PARENTHETICAL = re.compile(r"\s*\([^)]*\)\s*$")


@dataclass(frozen=True)
class Topic:
    """What a passage is about: the forms it goes by (folded), and whether the passage opens with its definition."""

    text: str
    forms: tuple[str, ...]
    defined: bool


@dataclass(frozen=True)
class Filler:
    """What fills the relation in a statement: as written, the forms it goes by (folded), and its kind."""

    text: str
    forms: tuple[str, ...]
    kind: MentionKind
    topic: bool  # the passage's topic, not a mention in the clause


@dataclass(frozen=True)
class Statement:
    """A clause of one passage that relates the frame's subject, and what it says fills the relation."""

    evidence_id: str
    text: str
    filler: Filler
    distance: int  # words from the filler to the nearest relation word
    strong: bool  # firm enough to contradict an answer on its own (``_strong``)


def passage_topic(evidence: Evidence) -> tuple[Topic | None, str]:
    """The passage's topic and the text after its definition's head (the whole text without one)."""
    head = _HEAD.match(evidence.text)
    title = fold(evidence.title).strip()
    if head is not None:
        forms = [form.strip() for form in head.group(1).split(",")]
        folded = [fold(form) for form in forms]
        if all(0 < len(f.split()) <= MAX_HEAD_WORDS for f in folded) and title in folded:
            names = [fold(form) for form in forms if _names_the_topic(form)]
            return Topic(forms[0], tuple(dict.fromkeys([folded[0], *names])), True), evidence.text[head.end() :]
    bare = _PARENTHETICAL.sub("", evidence.title).strip()
    named = [form for form in dict.fromkeys((bare, evidence.title)) if form and fold(form) in fold(evidence.text)]
    if not named:
        return None, evidence.text
    return Topic(named[0], tuple(fold(form) for form in named), defined=False), evidence.text


def _names_the_topic(form: str) -> bool:
    """A form of the head that is another name of the topic ("Rangoon"), not a description of it ("capital of
    Georgia", which other capitals' heads share)."""
    parts = form.split()
    return len(parts) == 1 or all(part[:1].isupper() or part in NAME_LINKS for part in parts)


def _sentences(body: str, defined: bool) -> Iterable[tuple[list[str], bool]]:
    """The body's sentences as their clauses, each with whether it describes the defined topic (a quoted
    example does not). A definition's parts between semicolons are sentences of their own ("Sydney: the
    largest Australian city; state capital of New South Wales"); prose joins two clauses with one
    ("Iron is a chemical element; it has symbol Fe")."""
    for part, segment in enumerate(body.split('"')):
        describes = defined and part % 2 == 0
        for sentence in segment.split(";") if describes else sentences(segment):
            clauses = [clause.strip() for clause in _CLAUSE.split(sentence) if clause.strip()]
            if clauses:
                yield clauses, describes


def _topic_filler(topic: Topic, wanted: MentionKind) -> Filler | None:
    """The topic as the filler, where it is of the answer's kind (a place does not answer "in what year")."""
    kind: MentionKind = "name" if topic.text[:1].isupper() else "term"
    return Filler(topic.text, topic.forms, kind, topic=True) if compatible(kind, wanted) else None


def _candidates(
    reading: ClauseReading, frame: Frame, subject: Sequence[tuple[int, int]], entity: Mention
) -> list[Mention]:
    """The clause's mentions that could fill the relation: of the answer's kind (a number in its unit, where both
    give one), neither the subject nor only the question's own words."""
    own = frame.question_words | set(frame.relation_stems)
    return [
        m
        for m in mentions(reading.words, terms=entity.kind == "term")
        if compatible(m.kind, entity.kind)
        and (m.unit is None or entity.unit is None or m.unit == entity.unit)
        and not set(m.folded.split()) <= own
        and not any(m.first <= end and start <= m.last for start, end in subject)
    ]


def _filler(
    reading: ClauseReading,
    frame: Frame,
    subject: Sequence[tuple[int, int]],
    entity: Mention,
    topic: Topic | None,
    describes: bool,
) -> tuple[Filler, Fill] | None:
    """What fills the relation, and how: the topic where the clause's subject is a pronoun ("he was the first
    ..."), else the topic a definition describes (where it is of the answer's kind: not "in 1945 at the end of
    the war" of a place, and not the agent of "unaffected by penicillin"), else the clause's filler."""
    by_topic = Fill((), min(reading.relation) + 1, firm=True)
    if reading.pronoun_subject:  # "he was the first ...": the topic, if the passage has one, else nobody known
        filler = _topic_filler(topic, entity.kind) if topic is not None else None
        return (filler, by_topic) if filler is not None else None
    if topic is not None and describes and reading.shape != "agent":
        filler = _topic_filler(topic, entity.kind)
        if filler is not None:
            return filler, by_topic
    filled = reading.fill(_candidates(reading, frame, subject, entity))
    if filled is None:
        return None
    first = filled.group[0]
    return Filler(first.text, tuple(m.folded for m in filled.group), first.kind, topic=False), filled


def _relates_subject(reading: ClauseReading, subject: Sequence[tuple[int, int]], about_subject: bool) -> bool:
    """Whether the clause's relation is the subject's (see the module docstring)."""
    if reading.owned_by_pronoun and not about_subject:
        return False  # "its capital" in a passage about something else
    owned_by_subject = any(any(m.first <= e and s <= m.last for s, e in subject) for m in reading.owners)
    if reading.owners and not owned_by_subject:
        return False
    return bool(subject) or about_subject


def _strong(
    reading: ClauseReading, subject: Sequence[tuple[int, int]], about: bool, filler: Filler, fill: Fill
) -> bool:
    """A statement firm enough to contradict: the whole relation in the clause as the question says it, the
    subject named there (or the passage about it), and the filler the defined topic or, read firmly, close to the
    relation."""
    far = fill.distance
    close = filler.topic or (fill.firm and far <= STRONG_DISTANCE and (reading.shape != "near" or far <= 2))
    return reading.complete and (bool(subject) or about) and close


@dataclass(frozen=True)
class _PassageReader:
    """Reads one passage's clauses against the frame (what ``statements`` shares between its clauses)."""

    frame: Frame
    entity: Mention
    lexicon: Lexicon
    subject_forms: Sequence[str]
    topic: Topic | None

    @property
    def about_subject(self) -> bool:
        return self.topic is not None and bool(set(self.topic.forms) & set(self.subject_forms))

    def statement(self, evidence_id: str, text: str, sentence_stems: set[str], describes: bool) -> Statement | None:
        """What the clause ``text`` says fills the relation; None when it does not answer the frame."""
        reading = read_clause(words(text, self.lexicon), self.frame, sentence_stems)
        if reading is None or reading.denied or reading.speaks_of_other_time:
            return None
        subject = reading.occurrences(self.subject_forms)
        reading = reading.nearest_to(subject)
        if not _relates_subject(reading, subject, self.about_subject):
            return None
        # An alias of the subject may be what fills the relation ("gold, Au": its symbol is Au); its own name not.
        named = reading.occurrences([" ".join(self.frame.subject_words)])
        # The topic fills the relation only where it is not the subject itself.
        topic = None if self.about_subject else self.topic
        filled = _filler(reading, self.frame, named, self.entity, topic, describes)
        if filled is None:
            return None
        filler, fill = filled
        strong = _strong(reading, subject, self.about_subject, filler, fill)
        return Statement(evidence_id, text, filler, fill.distance, strong)


def statements(
    frame: Frame,
    evidence: Evidence,
    entity: Mention,
    lexicon: Lexicon,
    subject_forms: Sequence[str],
) -> list[Statement]:
    """The clauses of ``evidence`` that relate the frame's subject (under any of ``subject_forms``), each with
    what fills the relation where it could be the answer's ``entity``."""
    topic, body = passage_topic(evidence)
    reader = _PassageReader(frame, entity, lexicon, subject_forms, topic)
    found = []
    for clauses, describes in _sentences(body, topic is not None and topic.defined):
        stems = {w.stem for clause in clauses for w in words(clause, lexicon)}
        if not set(frame.relation_stems) <= stems and not frame.agentive:
            continue
        for text in clauses:
            statement = reader.statement(evidence.id, text, stems, describes)
            if statement is not None:
                found.append(statement)
    return found
