"""An answer into claims: list items, sentences, and clauses that make claims of their own. Pure functions.

The answer is parsed once (spaCy, with its dependency parser); this module reads the parse:

1. **Segments.** A line that opens with a list marker ("1.", "2)", "-", "*", "•") starts an item of its
   own, and a blank line ends a paragraph: no claim runs across either, and the marker is no part of it.
2. **Sentences** within a segment, as the parser found them.
3. **Clauses.** A sentence whose main verb has a conjoined verb ("Paris is the capital of France and it lies
   on the Seine") makes one claim per verb. A second clause without a subject of its own ("... and helped
   pave the way") is checked with the first clause's subject carried over.
4. **Filler** is left out: pleasantries ("Great question!", "I hope this helps"), a list's lead-in ("Here
   are three facts:"), questions, and anything that names nothing (no noun, name or number).
5. **Pronouns** ("it", "he", "she", "they" as a clause's subject, and "its", "his", "her", "their" before
   it) are resolved to the last fitting subject before them: a person for "he"/"she", a thing for "it". A
   copular sentence whose subject is a description and whose complement a name ("The capital of France is
   Paris") offers the name, so that "It lies on the Seine" is checked as "Paris lies on the Seine". The
   claim keeps its own span; the resolved text is its ``statement``.

Every claim keeps ``answer[start:end] == text``. Its ``weight`` counts what it says: named entities,
numbers and dates (``selection.py`` keeps the heaviest).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from spacy.tokens import Doc, Span, Token

from ..types import Claim

__all__ = ["claim_weight", "segments", "split_claims"]

# A list item's marker at the start of a line: "1.", "12)", "-", "*", "•", "+" followed by a space.
_MARKER = re.compile(r"^[ \t]*(?:\d{1,3}[.)]|[-*•+])[ \t]+", re.MULTILINE)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_FILLER = re.compile(
    r"^(?:(?:that's\s+a\s+|what\s+a\s+)?(?:great|good|excellent|interesting|fantastic)\s+question"
    r"|(?:sure|certainly|of course|absolutely|okay|ok|yes|no|well|hello|hi)\W*$"
    r"|(?:sure|certainly|of course|absolutely)\W+(?:here|i|let)\b"
    r"|i\s+hope\s+(?:this|that|it)\s+helps"
    r"|(?:please\s+)?(?:let\s+me\s+know|feel\s+free)\b"
    r"|thanks?\b|thank\s+you"
    r"|i(?:'m|\s+am)\s+(?:happy|glad)\s+to\s+help"
    r"|(?:here\s+(?:is|are)|here's|below\s+(?:is|are))\b.*:$"
    r"|.*:$"
    r"|in\s+(?:summary|conclusion)\W*$)",
    re.IGNORECASE,
)
_SUBJECTS = frozenset({"nsubj", "nsubjpass", "csubj"})
_CONTENT = frozenset({"NOUN", "PROPN", "NUM"})
_CLAUSE_JOINS = frozenset({"cc", "punct"})
_PERSONS = frozenset({"he", "she", "him", "her", "his"})
_PRONOUNS = {"it": "thing", "he": "person", "she": "person", "they": "plural"}
_POSSESSIVES = {"its": "thing", "his": "person", "her": "person", "their": "plural"}
_MAX_ANTECEDENT_TOKENS = 6
_NUMERIC_ENTITIES = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "MONEY", "PERCENT"})


def segments(answer: str) -> list[tuple[int, int]]:
    """The answer's list items and paragraphs as (start, end) character ranges, markers left out."""
    cuts = {0, len(answer)}
    markers: list[tuple[int, int]] = []
    for match in _MARKER.finditer(answer):
        cuts.add(match.start())
        markers.append((match.start(), match.end()))
    cuts.update(match.end() for match in _BLANK_LINE.finditer(answer))
    bounds = sorted(cuts)
    ranges = []
    for start, end in itertools.pairwise(bounds):
        for marker_start, marker_end in markers:
            if marker_start == start:
                start = marker_end
        ranges.append((start, end))
    return [(start, end) for start, end in ranges if answer[start:end].strip()]


def _content(span: Span) -> bool:
    return any(token.pos_ in _CONTENT for token in span) or bool(span.ents)


def _trimmed(doc: Doc, start: int, end: int) -> Span | None:
    """Tokens ``start``..``end`` without the joins and spaces at either end; None when nothing is left."""
    while start < end and (doc[start].dep_ in _CLAUSE_JOINS or doc[start].is_space):
        start += 1
    while end > start and (
        doc[end - 1].is_space or (doc[end - 1].dep_ in _CLAUSE_JOINS and doc[end - 1].text not in ".!?")
    ):
        end -= 1
    return doc[start:end] if end > start else None


def _clause_heads(sentence: Span) -> list[Token]:
    """The sentence's main verbs: its root, then each verb conjoined to it that heads a clause of its own."""
    roots = [token for token in sentence if token.head == token or not (sentence.start <= token.head.i < sentence.end)]
    if not roots:
        return []
    root = roots[0]
    heads = [root]
    for child in root.children:
        if (
            child.dep_ == "conj"
            and child.pos_ in ("VERB", "AUX")
            and child.i > root.i
            and len(list(child.subtree)) >= 3
        ):
            heads.append(child)
    return heads


@dataclass(frozen=True)
class _Clause:
    span: Span
    head: Token
    subject: Span | None  # carried over from the sentence's first clause when the clause has none of its own


def _subject_of(head: Token) -> Token | None:
    return next((child for child in head.children if child.dep_ in _SUBJECTS), None)


def _phrase(token: Token) -> Span:
    """A subject as a phrase: its named entity, its subtree when short, else its noun chunk's core."""
    doc = token.doc
    if token.ent_type_:
        entity = next(e for e in doc.ents if e.start <= token.i < e.end)
        return entity
    subtree = doc[token.left_edge.i : token.right_edge.i + 1]
    if len(subtree) <= _MAX_ANTECEDENT_TOKENS:
        return subtree
    return doc[token.left_edge.i : token.i + 1]


def _clauses(sentence: Span) -> Iterator[_Clause]:
    heads = _clause_heads(sentence)
    if len(heads) <= 1:
        if heads:
            yield _Clause(sentence, heads[0], None)
        return
    doc = sentence.doc
    starts = [sentence.start] + [head.left_edge.i for head in heads[1:]]
    ends = [*starts[1:], sentence.end]
    first_subject = _subject_of(heads[0])
    for head, start, end in zip(heads, starts, ends, strict=True):
        span = _trimmed(doc, start, end)
        if span is None:
            continue
        carried = None
        if head is not heads[0] and _subject_of(head) is None and first_subject is not None:
            carried = _phrase(first_subject)
        yield _Clause(span, head, carried)


def _is_filler(span: Span) -> bool:
    text = span.text.strip()
    return not _content(span) or text.endswith("?") or bool(_FILLER.match(text))


@dataclass
class _Antecedents:
    """The last subject of each kind seen so far, as the phrase a pronoun of that kind stands for."""

    person: str | None = None
    thing: str | None = None
    plural: str | None = None

    def resolve(self, kind: str) -> str | None:
        return getattr(self, kind)

    def remember(self, clause: _Clause, resolved: str | None) -> None:
        subject = _subject_of(clause.head)
        if subject is None:
            return
        if subject.lower_ in _PRONOUNS:
            if resolved is not None:  # "It ..." keeps "it" meaning what it was resolved to
                setattr(self, _PRONOUNS[subject.lower_], resolved)
            return
        phrase = _phrase(subject)
        named = _named_complement(clause.head, subject)
        setattr(self, _kind(subject, phrase), (named or phrase).text)

    def seed(self, question: Doc) -> None:
        """What the question is about, for a pronoun that opens the answer ("Tell me about the Moon." "It...")."""
        chunks = [chunk for chunk in question.noun_chunks if chunk.root.pos_ in ("PROPN", "NOUN")]
        if chunks:  # "it" too whatever the kind: the tagger calls the Moon a person
            self.thing = chunks[-1].text
            setattr(self, _kind(chunks[-1].root, chunks[-1]), chunks[-1].text)

    def carried(self, subject: Span) -> str:
        """A subject carried to a clause without one, its pronoun resolved ("His work" -> "Einstein's work")."""
        first = subject[0]
        kind = _PRONOUNS.get(first.lower_) or _POSSESSIVES.get(first.lower_)
        antecedent = self.resolve(kind) if kind is not None else None
        if antecedent is None:
            return subject.text
        if len(subject) == 1 and first.lower_ in _PRONOUNS:
            return antecedent
        rest = subject.text[len(first.text) :]
        return antecedent + ("'s" if first.lower_ in _POSSESSIVES else "") + rest


def _kind(subject: Token, phrase: Span) -> str:
    if any(e.label_ == "PERSON" for e in phrase.ents) or subject.ent_type_ == "PERSON":
        return "person"
    return "plural" if subject.tag_ in ("NNS", "NNPS") else "thing"


def _named_complement(head: Token, subject: Token) -> Span | None:
    """The name a copular clause gives its described subject: "The capital of France is Paris" gives Paris."""
    if head.lemma_ != "be" or subject.pos_ == "PROPN":
        return None
    attribute = next((child for child in head.children if child.dep_ == "attr"), None)
    if attribute is None or attribute.pos_ != "PROPN" or not attribute.ent_type_:
        return None
    return _phrase(attribute)


def _pronoun(clause: _Clause) -> tuple[Token, str, bool] | None:
    """The clause's subject pronoun, or the possessive before its subject: (token, kind, possessive)."""
    subject = _subject_of(clause.head)
    if subject is None or not (clause.span.start <= subject.i < clause.span.end):
        return None
    if subject.lower_ in _PRONOUNS:
        return subject, _PRONOUNS[subject.lower_], False
    owner = next((child for child in subject.children if child.dep_ == "poss"), None)
    if owner is not None and owner.lower_ in _POSSESSIVES:
        return owner, _POSSESSIVES[owner.lower_], True
    return None


def _statement(clause: _Clause, antecedents: _Antecedents) -> tuple[str, str | None]:
    """The clause as its checks read it, and what its subject pronoun was resolved to (None: nothing)."""
    span = clause.span
    text = span.text
    if clause.subject is not None:
        return f"{antecedents.carried(clause.subject)} {text}", None
    found = _pronoun(clause)
    if found is None:
        return text, None
    token, kind, possessive = found
    antecedent = antecedents.resolve(kind)
    if antecedent is None:
        return text, None
    start = token.idx - span.start_char
    replacement = antecedent + ("'s" if possessive else "")
    if start == 0:
        replacement = replacement[:1].upper() + replacement[1:]
    elif replacement.startswith(("The ", "A ", "An ")):  # a description's article, mid-sentence
        replacement = replacement[:1].lower() + replacement[1:]
    return text[:start] + replacement + text[start + len(token.text) :], antecedent


def claim_weight(span: Span) -> float:
    """How much a claim says: 2 per named entity (numbers and dates among them), 1 per other name or number."""
    inside = {token.i for entity in span.ents for token in entity}
    named = sum(2.0 for _ in span.ents)
    loose = sum(1.0 for token in span if token.i not in inside and token.pos_ in ("PROPN", "NUM"))
    return named + loose


def _sentences(doc: Doc, start: int, end: int) -> Iterator[Span]:
    """The parser's sentences cut to the segment ``start``..``end`` (characters)."""
    for sentence in doc.sents:
        lo, hi = max(start, sentence.start_char), min(end, sentence.end_char)
        if lo >= hi:
            continue
        span = doc.char_span(lo, hi, alignment_mode="contract")
        if span is not None and len(span):
            yield span


def split_claims(doc: Doc, question: Doc | None = None) -> list[Claim]:
    """Every claim of the parsed answer, in answer order (none dropped yet: ``selection.py``); ``question``,
    parsed, tells what a pronoun that opens the answer stands for."""
    claims: list[Claim] = []
    antecedents = _Antecedents()
    if question is not None:
        antecedents.seed(question)
    for seg_start, seg_end in segments(doc.text):
        for sentence in _sentences(doc, seg_start, seg_end):
            for clause in _clauses(sentence):
                statement, resolved = _statement(clause, antecedents)
                antecedents.remember(clause, resolved)
                if _is_filler(clause.span):
                    continue
                span = clause.span
                end = span.end_char
                while end > span.start_char and doc.text[end - 1].isspace():
                    end -= 1
                text = doc.text[span.start_char : end]
                claims.append(Claim(span.start_char, end, text, statement.strip(), claim_weight(span), selected=True))
    return claims
