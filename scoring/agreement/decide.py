"""Does the evidence name the answer's entity in the asked relation, another one, or nothing usable?

The answer's entity is what fills the question's relation in the claim ("The
capital of Australia is Sydney": Sydney), or, in a claim that does not repeat
the relation ("Sydney."), its first mention that the question does not name.
A claim read with ``relation_required`` (one of a long answer's, past its
first: "It lies on the Seine" answers nothing about a capital) has an entity
only where it states the relation, and abstains otherwise.
Each evidence statement that answers the frame (``statements``) then agrees
(its filler is the answer's entity, under any alias the evidence gives it) or
contradicts (it names another entity of the same kind). Passages count once
per side:

* some agree and none contradicts: **agree**; the reverse: **contradict**;
* both: the side with at least twice the other's passages wins, by their
  difference; otherwise the evidence is in conflict and the check abstains;
* no statement (the evidence is silent on the question), no frame (the
  question relates nothing to a subject), no entity in the claim, a claim
  that denies the relation, or one required to state it that does not:
  **abstain**.

The value grows with the passages that decide: 0.75, 0.875, 0.94 … for one,
two, three agreeing passages, and 0.25, 0.125, 0.06 … for contradicting ones.
It is a ranking of how firmly the evidence speaks, not a calibrated
probability; the combination that reads it fits its weight.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..factcheck.evidence import Evidence
from .clauses import ClauseReading, compatible, read_clause
from .frame import Frame, read_frame
from .mentions import Mention, MentionKind, mentions, number_value
from .statements import Statement, passage_topic, statements
from .words import Lexicon, Word, sentences, words

__all__ = ["Agreement", "Reading", "Verdict", "answer_entity", "check_agreement", "claim_entity", "same_entity"]

Verdict = Literal["agree", "contradict", "abstain"]
# Why the check abstained, or what it found.
Reason = Literal["agree", "contradict", "no_frame", "no_entity", "unstated", "denied", "silent", "conflicting"]

# Words a name may carry or drop and stay the same name ("Mexico City" / "Mexico", "Luxembourg-Ville").
GENERIC_NAME_WORDS = frozenset({"the", "city", "town", "ville", "of", "saint", "st", "island", "islands", "state"})
_KEY_SPLIT = re.compile(r"[\s\-]+")
_POSSESSIVE_OR_DOT = re.compile(r"\s*'s\b|\.")
_CLAIM_CLAUSE = re.compile(r"[;:]\s+|,?\s+but\s+")


@dataclass(frozen=True)
class Reading:
    """One evidence statement and whether its filler is the answer's entity."""

    statement: Statement
    agrees: bool


@dataclass(frozen=True)
class Agreement:
    """The check's verdict, its value (None when it abstains), why, and what it compared."""

    verdict: Verdict
    value: float | None
    reason: Reason
    frame: Frame | None = None
    entity: Mention | None = None
    entity_forms: tuple[str, ...] = ()
    readings: tuple[Reading, ...] = ()
    agreeing: int = 0  # passages that name the entity in the relation
    contradicting: int = 0  # passages that firmly name another entity there


def _name_key(form: str, drop: frozenset[str]) -> tuple[str, ...]:
    """A name's words without generic ones, dots and possessives ("St. John's" and "St . John 's": "john")."""
    bare = _POSSESSIVE_OR_DOT.sub(" ", form)
    return tuple(word for word in _KEY_SPLIT.split(bare) if word and word not in GENERIC_NAME_WORDS | drop)


def same_entity(entity_forms: Iterable[str], kind: MentionKind, filler_forms: Iterable[str], lexicon: Lexicon) -> bool:
    """Whether a filler is the answer's entity: equal numbers, or names equal up to generic words and accents
    (and, for common nouns, up to adjectives: "Japanese yen" is "yen")."""
    if kind in {"year", "number"}:
        values = {number_value(form) for form in entity_forms} - {None}
        return bool(values & ({number_value(form) for form in filler_forms} - {None}))
    drop = lexicon.adjectives if kind == "term" else frozenset()
    keys = {key for form in entity_forms if (key := _name_key(form, drop))}
    return any(_name_key(form, drop) in keys for form in filler_forms)


def _claim_entity(reading: ClauseReading | None, clause: Sequence[Word], frame: Frame) -> Mention | None:
    """What fills the relation in a claim's clause (``reading``), or without the relation its first mention: of
    the kind the question asks for, where it says, and a name, year or number before a term."""
    subject = reading.occurrences([" ".join(frame.subject_words)]) if reading is not None else []
    candidates = [
        m
        for m in mentions(clause, terms=True)
        if not set(m.folded.split()) <= frame.question_words
        and not any(m.first <= end and start <= m.last for start, end in subject)
    ]
    # Of the kind the question asks for, where it says ("who": a name, or a common noun); a term only failing all else.
    wanted = [m for m in candidates if frame.kind is None or compatible(m.kind, frame.kind)]
    for group in ([m for m in wanted if m.kind != "term"], [m for m in wanted if m.kind == "term"]):
        if reading is None:
            if group:
                return group[0]
            continue
        filled = reading.fill(group)
        if filled is not None:
            return filled.group[0]
    return None


def answer_entity(
    frame: Frame, claim: str, lexicon: Lexicon, *, relation_required: bool = False
) -> tuple[Mention | None, bool]:
    """The claim's answer to the frame, and whether the claim denies the relation ("is not a specific place").

    A clause holding the relation's words is read first; without one, the whole claim, unless
    ``relation_required``: then a claim that does not state the relation has no answer.
    """
    for part in (clause for sentence in sentences(claim) for clause in _CLAIM_CLAUSE.split(sentence)):
        clause = words(part, lexicon)
        reading = read_clause(clause, frame, {w.stem for w in clause})
        if reading is None:
            continue
        if reading.denied:
            return None, True
        found = _claim_entity(reading, clause, frame)
        if found is not None:
            return found, False
    if relation_required:
        return None, False
    return _claim_entity(None, words(claim, lexicon), frame), False


def given_entity(text: str, lexicon: Lexicon) -> Mention | None:
    """An answer entity given by the caller (a claim splitter that already knows it), read as a mention."""
    clause = words(text, lexicon)
    found = mentions(clause, terms=True)
    if not found:
        return None
    whole = " ".join(w.folded for w in clause)
    kind = found[0].kind if len(found) == 1 else "name"
    return Mention(text.strip(), whole, kind, 0, len(clause) - 1)


def _aliases(forms: set[str], evidence: Sequence[Evidence]) -> set[str]:
    """``forms`` and every other form a retrieved passage's topic gives the same thing ("Yangon, Rangoon")."""
    found = set(forms)
    for passage in evidence:
        topic, _ = passage_topic(passage)
        if topic is not None and topic.defined and set(topic.forms) & forms:
            found |= set(topic.forms)
    return found


def _value(deciding: int, agrees: bool) -> float:
    doubt = 0.5 ** (deciding + 1)
    return 1.0 - doubt if agrees else doubt


def _decide(agreeing: int, against: int) -> tuple[Verdict, float | None, Reason]:
    """The verdict of ``agreeing`` passages against ``against`` ones (see the module docstring)."""
    if not agreeing and not against:
        return "abstain", None, "silent"
    if agreeing >= 2 * against:
        return "agree", _value(agreeing - against, True), "agree"
    if against >= 2 * agreeing:
        return "contradict", _value(against - agreeing, False), "contradict"
    return "abstain", None, "conflicting"


def _entity(
    frame: Frame, claim: str, lexicon: Lexicon, entity: str | None, relation_required: bool
) -> tuple[Mention | None, bool]:
    if entity is not None:
        return given_entity(entity, lexicon), False
    return answer_entity(frame, claim, lexicon, relation_required=relation_required)


def claim_entity(
    question: str, claim: str, lexicon: Lexicon, entity: str | None = None, *, relation_required: bool = False
) -> Mention | None:
    """The entity the claim answers the question with (``entity`` where the caller knows it); None without one."""
    frame = read_frame(question, lexicon)
    return None if frame is None else _entity(frame, claim, lexicon, entity, relation_required)[0]


def check_agreement(
    question: str,
    claim: str,
    evidence: Sequence[Evidence],
    lexicon: Lexicon,
    entity: str | None = None,
    *,
    relation_required: bool = False,
) -> Agreement:
    """Read ``evidence`` (retrieved for the question) against one claim of the answer to ``question``.

    ``entity`` is the claim's answer entity where the caller knows it; otherwise it is read from the claim, in
    a clause that states the asked relation only, with ``relation_required``.
    """
    frame = read_frame(question, lexicon)
    if frame is None:
        return Agreement("abstain", None, "no_frame")
    found, denied = _entity(frame, claim, lexicon, entity, relation_required)
    if found is None:
        reason: Reason = "denied" if denied else "unstated" if relation_required else "no_entity"
        return Agreement("abstain", None, reason, frame)
    subject = " ".join(frame.subject_words)
    # The answer's own form is never the subject, though WordNet lists "Au" among gold's names.
    forms = _aliases({found.folded}, evidence) - {subject} if found.kind in {"name", "term"} else {found.folded}
    subject_forms = sorted(_aliases({subject}, evidence) - {found.folded})
    readings = tuple(
        Reading(statement, same_entity(forms, found.kind, statement.filler.forms, lexicon))
        for passage in evidence
        for statement in statements(frame, passage, found, lexicon, subject_forms)
    )
    agreeing = len({r.statement.evidence_id for r in readings if r.agrees})
    against = len({r.statement.evidence_id for r in readings if not r.agrees and r.statement.strong})
    verdict, value, reason = _decide(agreeing, against)
    return Agreement(verdict, value, reason, frame, found, tuple(sorted(forms)), readings, agreeing, against)
