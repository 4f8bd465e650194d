"""Which words of an answer to substitute, in the priority levels of the paper's Algorithm 1.

The more informative a word, the more a distractor that changes it tests what
the model knows. Algorithm 1 (TrustScore, Appendix A.5.1) orders them:

1. entities only in the answer (``ents_1``);
2. nouns and numbers only in the answer (``nncds_1``);
3. verbs and adjectives only in the answer (``vbjjs_1``), then entities and
   nouns also in the question (``ents_2``, ``nncds_2``);
4. every other word.

Only the highest non-empty level is used (``substitution.py``). Words inside
an entity belong to the entity. Pure functions of two spaCy docs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from spacy.tokens import Doc, Span, Token

from .embedding import stem
from .numeric import is_numeric_token

__all__ = ["TITLES", "Levels", "Target", "select_targets"]

NUMERIC_ENTITIES = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "MONEY", "PERCENT"})
NOUN_OR_NUMBER = frozenset({"NN", "NNS", "NNP", "NNPS", "CD"})
TITLES = frozenset(
    {
        "king",
        "queen",
        "prince",
        "princess",
        "emperor",
        "empress",
        "pope",
        "saint",
        "st",
        "sir",
        "lord",
        "lady",
        "president",
        "general",
        "dr",
        "mr",
        "mrs",
        "ms",
        "captain",
        "admiral",
        "sultan",
        "tsar",
        "czar",
        "pharaoh",
        "caliph",
        "shah",
        "duke",
        "bishop",
        "senator",
        "governor",
        "chancellor",
        "professor",
        "prophet",
    }
)


@dataclass(frozen=True)
class Target:
    """A span of the answer to replace: an entity or a single word."""

    text: str
    start: int  # character offsets in the answer
    end: int
    kind: Literal["entity", "word"]
    label: str  # spaCy's entity label, or the word's Penn tag
    tag: str  # Penn tag of the span's last token
    words: tuple[str, ...]  # the span's word tokens, for embedding look-ups
    numeric: bool  # a date or number: it gets numeric substitutes


@dataclass(frozen=True)
class Levels:
    ents_1: tuple[Target, ...] = ()
    nncds_1: tuple[Target, ...] = ()
    vbjjs_1: tuple[Target, ...] = ()
    ents_2: tuple[Target, ...] = ()
    nncds_2: tuple[Target, ...] = ()
    others: tuple[Target, ...] = ()


def _normalised(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _numeric(text: str, this_year: int) -> bool:
    return any(is_numeric_token(t.strip(".,;:()"), this_year) for t in text.split())


def _entity_target(span: Span, this_year: int) -> Target:
    numeric = span.label_ in NUMERIC_ENTITIES and _numeric(span.text, this_year)
    return Target(
        span.text,
        span.start_char,
        span.end_char,
        "entity",
        span.label_,
        span[-1].tag_,
        tuple(t.text for t in span if t.is_alpha),
        numeric,
    )


def _word_target(token: Token, this_year: int) -> Target:
    numeric = token.tag_ == "CD" and _numeric(token.text, this_year)
    return Target(
        token.text, token.idx, token.idx + len(token.text), "word", token.tag_, token.tag_, (token.text,), numeric
    )


def _adjusted(span: Span) -> Span:
    """The entity as a reader would replace it: without a leading determiner ("the revolutionary
    war" -> "revolutionary war"), with a title spaCy left out ("Solomon" -> "King Solomon")."""
    start = span.start + 1 if len(span) > 1 and span[0].lower_ in ("the", "a", "an") else span.start
    before = span.doc[start - 1] if start > 0 else None
    if span.label_ == "PERSON" and before is not None and before.is_title and before.lower_.rstrip(".") in TITLES:
        start -= 1
    return Span(span.doc, start, span.end, label=span.label_)


def _common_noun(span: Span) -> bool:
    """spaCy's small model tags some lower-case common nouns as entities ("patty" as PERSON)."""
    return all(t.is_lower and t.tag_ in ("NN", "NNS") for t in span)


def select_targets(question: Doc, answer: Doc, this_year: int) -> Levels:
    """Split the answer's entities and words into Algorithm 1's priority groups.

    ``answer`` must be tagged and carry entities; ``question`` needs only tokens
    (it is compared by lower-case form and stem, so tokenising it is enough).
    """
    asked = f" {_normalised(question.text)} "
    asked_words = {t.lower_ for t in question} | {stem(t.lower_) for t in question}
    ents_1: list[Target] = []
    ents_2: list[Target] = []
    inside: set[int] = set()
    for entity in answer.ents:
        if _common_noun(entity):
            continue
        span = _adjusted(entity)
        inside.update(range(span.start, span.end))
        target = _entity_target(span, this_year)
        (ents_2 if f" {_normalised(span.text)} " in asked else ents_1).append(target)
    nncds_1: list[Target] = []
    vbjjs_1: list[Target] = []
    nncds_2: list[Target] = []
    others: list[Target] = []
    for token in answer:
        if token.i in inside or token.is_punct or token.is_space or not re.search(r"\w", token.text):
            continue
        in_question = not asked_words.isdisjoint({token.lower_, token.lemma_.lower(), stem(token.lower_)})
        target = _word_target(token, this_year)
        if token.tag_ in NOUN_OR_NUMBER:
            (nncds_2 if in_question else nncds_1).append(target)
        elif not in_question and token.pos_ != "AUX" and token.tag_[:2] in ("VB", "JJ"):
            vbjjs_1.append(target)
        else:
            others.append(target)
    return Levels(tuple(ents_1), tuple(nncds_1), tuple(vbjjs_1), tuple(ents_2), tuple(nncds_2), tuple(others))
