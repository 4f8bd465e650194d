"""What a clause names: names, years, numbers and (for an answer that is a common noun) terms.

A name is a run of capitalised words, which may hold the short linking words
of place and person names ("Port of Spain", "Ciudad de la Paz", "Leonardo da
Vinci"); a capitalised function word ("The", "Its") opening a sentence is not
one. A year is a number from 1000 to 2100 (or one marked BC/AD); other numbers,
in digits or words up to twenty, are numbers. Terms are runs of lower-case
content words ("yen", "atomic number"), read only where the answer itself is
one, because in prose nearly every word is a term. A capitalised adjective
before a common noun ("Italian artist") is not a name. No tagger is needed:
the check must run on any corpus a user adds, in a few milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..factcheck.text import STOPWORDS
from .words import Word

__all__ = ["Mention", "MentionKind", "mentions", "number_value"]

MentionKind = Literal["name", "year", "number", "term"]

# Lower-case words that may sit inside a name, between two capitalised words.
NAME_LINKS = frozenset({"of", "de", "da", "del", "della", "do", "dos", "das", "du", "des", "la", "le", "el", "al"})
NAME_LINKS |= frozenset({"von", "van", "der", "den", "y", "the", "upon", "on", "au", "ibn", "bin", "es", "di", "dei"})
# Capitalised words that open a question or an instruction, not a name.
NOT_NAMES = frozenset({"name", "list", "tell", "give", "please", "yes", "no"})
NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
ERA_MARKS = frozenset({"bc", "bce", "ad", "ce"})


@dataclass(frozen=True)
class Mention:
    """A span of a clause that may fill a relation: what it says, its kind, and its first and last word."""

    text: str
    folded: str  # its words folded, joined by single spaces: what mentions are compared by
    kind: MentionKind
    first: int
    last: int
    unit: str | None = None  # a number's unit, the word after it ("100 degrees"), folded


def number_value(folded: str) -> float | None:
    """The value of a number written in digits ("2,355") or as a word up to twenty; None otherwise."""
    if folded in NUMBER_WORDS:
        return float(NUMBER_WORDS[folded])
    try:
        return float(folded.replace(",", ""))
    except ValueError:
        return None


def _modifies_next(clause: Sequence[Word], index: int) -> bool:
    """A capitalised adjective before a common noun ("Italian artist", "Japanese yen") is not a name."""
    following = clause[index + 1] if index + 1 < len(clause) else None
    return (
        clause[index].adjective
        and following is not None
        and following.text.isalpha()
        and following.text.islower()
        and following.folded not in STOPWORDS
    )


def _is_name_word(word: Word) -> bool:
    if not word.capitalised or word.is_number:
        return False
    if word.text.isupper() and len(word.text) > 1:
        return True  # "US", "UN", "NATO"
    return word.folded not in STOPWORDS and word.folded not in NOT_NAMES


def _is_term_word(word: Word) -> bool:
    return word.text.isalpha() and word.text.islower() and word.folded not in STOPWORDS


def _span(clause: Sequence[Word], first: int, last: int, kind: MentionKind) -> Mention:
    span = clause[first : last + 1]
    return Mention(" ".join(w.text for w in span), " ".join(w.folded for w in span), kind, first, last)


def _number(clause: Sequence[Word], index: int, kind: MentionKind) -> Mention:
    after = clause[index + 1] if index + 1 < len(clause) else None
    unit = after.stem if after is not None and after.text.isalpha() and after.folded not in STOPWORDS else None
    word = clause[index]
    return Mention(word.text, word.folded, kind, index, index, None if kind == "year" else unit)


def _name_end(clause: Sequence[Word], start: int) -> int:
    """The last word of the name that starts at ``start``. Inside a name any capitalised word goes on with it
    ("Thomas More"); linking words count only between name words; the dot of a short abbreviation ("St. John's")
    and a closing "'s" that no noun follows are part of it."""
    end = start
    cursor = start + 1
    while cursor < len(clause):
        word = clause[cursor]
        if word.capitalised and not word.is_number:
            end = cursor
        elif word.folded in NAME_LINKS or (word.text == "." and len(clause[cursor - 1].text) <= 3):
            pass
        elif word.folded == "'s" and not _noun_follows(clause, cursor):
            end = cursor
            break
        else:
            break
        cursor += 1
    return end


def _noun_follows(clause: Sequence[Word], index: int) -> bool:
    following = clause[index + 1] if index + 1 < len(clause) else None
    return following is not None and following.text[:1].isalpha()


def _number_kind(clause: Sequence[Word], index: int) -> MentionKind | None:
    word = clause[index]
    value = number_value(word.folded)
    if value is None:
        return None
    after = clause[index + 1].folded if index + 1 < len(clause) else ""
    if word.is_number and (
        (1000 <= value <= 2100 and value.is_integer() and "," not in word.text) or after in ERA_MARKS
    ):
        return "year"
    return "number"


def mentions(clause: Sequence[Word], *, terms: bool = False) -> list[Mention]:
    """The names, years and numbers of a clause in order; with ``terms``, its lower-case content words too."""
    found: list[Mention] = []
    index = 0
    while index < len(clause):
        word = clause[index]
        kind = _number_kind(clause, index)
        if kind is not None:
            found.append(_number(clause, index, kind))
        elif _is_name_word(word) and not _modifies_next(clause, index):
            end = _name_end(clause, index)
            found.append(_span(clause, index, end, "name"))
            index = end
        elif terms and _is_term_word(word):
            end = index
            while end + 1 < len(clause) and _is_term_word(clause[end + 1]):
                end += 1
            found.append(_span(clause, index, end, "term"))
            index = end
        index += 1
    return found
