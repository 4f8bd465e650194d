"""What a question asks: its subject, the relation asked about it, and the kind of answer it wants.

"What is the capital of Australia?" asks the relation "capital" of the
subject "Australia"; "Who wrote Hamlet?" asks "wrote" of "Hamlet", and wants a
name; "In what year did the Berlin Wall fall?" asks "fall" of "Berlin Wall",
and wants a year. The subject is the question's last name (capitalised words,
"Cayman Islands", "Saint Kitts and Nevis"), or without one its closing words
("the chemical symbol for gold": "gold"). Every other content word is part of
the relation and must be found in a statement that answers it: "first" in
"the first President of the United States" is what keeps the third president
from answering. The noun after "which"/"what" is required too ("which
river"), except a year or an amount ("what year", "how many"); words that
only ask for a name ("called") are not, nor those of a request to describe
("Tell me about the Sun"). A question without a subject or a relation gives
no frame, and the check abstains.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..factcheck.text import STOPWORDS
from .mentions import MentionKind, mentions
from .words import Lexicon, Word, words

__all__ = ["Frame", "read_frame"]

# Words that ask for a name rather than relate anything: "What is the name of ...", "... known as"; and those of a
# request to describe ("Tell me about the Sun", "What do you know about Mount Everest?"), which asks no relation.
ASKING_WORDS = frozenset({"name", "named", "called", "known", "kind", "type", "sort", "one", "exactly", "actually"})
ASKING_WORDS |= frozenset({"tell", "know", "describe", "explain", "summarise", "summarize"})
WH_WORDS = frozenset({"what", "which", "who", "whom", "whose", "when", "where", "how"})
YEAR_HEADS = frozenset({"year", "century", "decade"})
HOW_MUCH = frozenset({"many", "much", "old", "long", "far", "tall", "big", "large", "high", "deep", "heavy", "wide"})
PAST = frozenset({"was", "were", "did", "had"})
PRESENT = frozenset({"is", "are", "does", "do", "has", "have"})
AND_WORDS = frozenset({"and", "&"})


@dataclass(frozen=True)
class Frame:
    """A question read as a relation of a subject: what a statement must say to answer it."""

    subject: str  # as written: "Cayman Islands"
    subject_words: tuple[str, ...]  # folded: ("cayman", "islands")
    relation: tuple[str, ...]  # every word a statement must contain, as written: ("capital",)
    relation_stems: tuple[str, ...]  # their stems, in the same order
    # The stems of the relation's words that stand together in the question ("longest river"), run by run: a
    # statement that says them apart ("the longest east-flowing river") says something narrower.
    relation_runs: tuple[tuple[str, ...], ...]
    kind: MentionKind | None  # the kind of answer its wh-word asks for; None: whatever the answer names
    present: bool  # asked in the present tense: a statement of the past ("was the capital until") does not answer
    # "Who wrote Hamlet?": the relation is the verb of an agent, which evidence may also say with "by" alone
    # ("a tragedy by William Shakespeare").
    agentive: bool
    question_words: frozenset[str]  # every folded word of the question: none of them is the answer


def _agentive(content: Sequence[Word], relation: Sequence[Word]) -> bool:
    """ "Who <verb> ...?": the relation is the one word right after "who"."""
    return (
        len(content) > 1
        and content[0].folded == "who"
        and len(relation) == 1
        and relation[0] is content[1]
        and content[1].folded not in STOPWORDS
    )


def _kind(content: Sequence[Word]) -> tuple[MentionKind | None, int | None]:
    """The answer kind the wh-word asks for, and the index of the noun it asks about ("which river": river)."""
    for index, word in enumerate(content):
        after = content[index + 1] if index + 1 < len(content) else None
        if word.folded in {"who", "whom", "whose"}:
            return "name", None
        if word.folded == "when":
            return "year", None
        if word.folded == "how" and after is not None and after.folded in HOW_MUCH:
            return "number", index + 1
        if word.folded in {"what", "which"} and after is not None and after.folded not in STOPWORDS:
            return ("year" if after.folded in YEAR_HEADS else None), index + 1
        if word.folded in WH_WORDS:
            return None, None
    return None, None


def _subject_span(content: Sequence[Word]) -> tuple[int, int] | None:
    """The first and last index of the subject: the last name (two joined by "and" are one), else the closing
    content words."""
    found = mentions(content)
    names = [m for m in found if m.kind == "name"]
    if names:
        last = names[-1]
        first = last.first
        for earlier in reversed(names[:-1]):
            if earlier.last + 2 == first and content[earlier.last + 1].folded in AND_WORDS:
                first = earlier.first
        # A number right after the name is part of it ("Apollo 11", "Boeing 747"), not something asked of it.
        numbered = any(m.first == last.last + 1 and m.kind == "number" for m in found)
        return first, last.last + 1 if numbered else last.last
    end = len(content) - 1
    while end >= 0 and content[end].folded in STOPWORDS:
        end -= 1
    start = end
    while start > 0 and content[start - 1].folded not in STOPWORDS | WH_WORDS and content[start - 1].text.isalpha():
        start -= 1
    if start == 1 and start < end and content[0].folded in WH_WORDS:
        start += 1  # "Who discovered penicillin?": the verb after the wh-word is the relation
    return (start, end) if end >= 0 else None


def _runs(indices: Sequence[int], content: Sequence[Word]) -> tuple[tuple[str, ...], ...]:
    runs: list[list[str]] = []
    for k, index in enumerate(indices):
        if k and index == indices[k - 1] + 1:
            runs[-1].append(content[index].stem)
        else:
            runs.append([content[index].stem])
    return tuple(tuple(run) for run in runs)


def read_frame(question: str, lexicon: Lexicon) -> Frame | None:
    """The question's frame; None when it has no subject, or nothing is asked of the subject."""
    content = [w for w in words(question, lexicon) if not w.is_punctuation]
    kind, head = _kind(content)
    span = _subject_span(content)
    if span is None:
        return None
    first, last = span
    # The noun a wh-word asks about is required too ("Which river flows through Paris?"), but not a year or an
    # amount, which statements give without saying "year".
    asked = head is not None and content[head].folded in YEAR_HEADS | HOW_MUCH
    indices = [
        index
        for index, w in enumerate(content)
        if not first <= index <= last
        and not (asked and index == head)
        and w.folded not in STOPWORDS | WH_WORDS | ASKING_WORDS
    ]
    if not indices:
        return None
    relation = [content[index] for index in indices]
    subject = content[first : last + 1]
    folded = {w.folded for w in content}
    return Frame(
        subject=" ".join(w.text for w in subject),
        subject_words=tuple(w.folded for w in subject),
        relation=tuple(w.text for w in relation),
        relation_stems=tuple(w.stem for w in relation),
        relation_runs=_runs(indices, content),
        kind=kind,
        present=bool(folded & PRESENT) and not folded & PAST,
        agentive=_agentive(content, relation),
        question_words=frozenset(folded),
    )
