"""Claims in an answer: sentences that tie a named thing, a date or a quantity to the world.

A claim here is a sentence with a relation word ("the capital of", "was born
in", "founded"), a superlative tied to a place, or a year, together with a name
or a number that the user did not write. Names are capitalised words; a word
that opens a sentence or a line counts only where it is the subject of the
relation ("Berlin, the capital of France", "Paris is ..."), because poems
capitalise every line. Claims the user wrote (a sentence to correct, a text to
translate) are the user's, not the answer's: every name and number of such a
sentence appears in what the user wrote.

Sentences about the assistant itself ("I was trained by ...") and hedged
opinions in the first person are not claims about the world.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .lexicon import SUPERLATIVE, WORLD_CUE, WORLD_CUE_CJK, YEAR

__all__ = ["Claim", "UserText", "borrowed_share", "find_claims", "named_things", "names_in_strings"]

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n\s*\n")
_TOKEN = re.compile(r"[^\W_][\w'’.-]*[^\W_]|[^\W_]")
_NUMBER = re.compile(r"\d")
_HEDGE = re.compile(
    r"^\W{0,3}((i think|i believe|i guess|i'?m (pretty |fairly )?sure|in my (opinion|view)|personally|honestly|"
    r"of course|well|fun fact|did you know|sure|ok|okay|certainly|absolutely|alright|yes|no|indeed|"
    r"i can tell you( that)?|i('d| would) say( that)?|i know( that)?|as far as i know|"
    r"(as of|according to) my (last|latest) (update|training|knowledge)|however|but|though)\b[,:]?\s*)+",
    re.IGNORECASE,
)
_ABOUT_ITSELF = re.compile(
    r"^\W{0,3}(i|i'm|i’m|i've|i'd|i'll|me|my|we|we're|our|as an ai|as a language model|je|yo|ich|io|eu|я|我)\b",
    re.IGNORECASE,
)
# After a sentence's first word, what makes that word the subject of a statement about it.
_SUBJECT = re.compile(
    r"^(?:,\s+(?:the|a|an|its|capital|home|city|birthplace|founded|born|la|le|el|die|der)\b"
    r"|\s+(?:is|was|has|had|became|lies|sits|stands|remains|est|es|ist|è|é|is de)\b|'s\b|’s\b)",
    re.IGNORECASE,
)
# Capitalised words that open sentences without naming anything, and names of no use as evidence.
_NOT_NAMES = frozenset(
    """a an the this that these those it its in on at of with from by for and but or so yet when while where what
    who how why if as there here then now once every each all some many most no not one two three yes oh o upon
    under over through beneath across like just still even let may i i'm i've i'd i'll you your he she they we our
    their his her my me to do does did is are was were be been can could will would should shall must might
    however also today tomorrow yesterday sure certainly absolutely great thanks thank sorry please hello hi hey
    dear monday tuesday wednesday thursday friday saturday sunday ai""".split()
)
_CONTENT_WORD = 4
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]{2,}")


@dataclass(frozen=True)
class UserText:
    """What the user wrote, and its words as names are compared with them: read once per answer."""

    text: str
    words: frozenset[str]

    @classmethod
    def of(cls, text: str) -> UserText:
        return cls(text, frozenset(_key(token) for token in _TOKEN.findall(text)))

    def wrote(self, name: str) -> bool:
        return _key(name) in self.words


NOBODY = UserText("", frozenset())


@dataclass(frozen=True)
class Claim:
    sentence: str
    new: tuple[str, ...]  # the names and numbers the user did not write


def find_claims(text: str, user: UserText, *, dates_count: bool = True, numbers_count: bool = True) -> list[Claim]:
    """The sentences of ``text`` that make a claim of their own (not one the user wrote).

    ``dates_count=False``: a year alone makes no claim (a translation carries the user's dates in new words);
    ``numbers_count=False``: numbers are no claim's anchor (a calculation's result is not a fact about the world).
    """
    found = []
    for sentence in _sentences(text):
        claim = _claim(sentence, user, dates_count=dates_count, numbers_count=numbers_count)
        if claim is not None:
            found.append(claim)
    return found


def named_things(text: str, user: UserText = NOBODY) -> list[str]:
    """The names and numbers of ``text``'s statements about the world that the user did not write.

    Sentences about the assistant itself ("Sure, I'm sending it to Tom") name nothing of the world.
    """
    return [
        thing
        for sentence in _sentences(text)
        if not _ABOUT_ITSELF.match(_HEDGE.sub("", sentence))
        for thing in _anchors(_HEDGE.sub("", sentence))
        if not user.wrote(thing)
    ]


def names_in_strings(strings: list[str], user: UserText) -> list[str]:
    """The names in a program's strings that the user did not write: ``return "Milan"`` names Milan, though the
    word opens its string (where a sentence's first word would not count)."""
    return [
        token.strip(".")
        for string in strings
        for token in _TOKEN.findall(string)
        if _is_name(token) and not user.wrote(token)
    ]


def borrowed_share(text: str, source: str) -> float:
    """The share of ``text``'s content words (four letters or more) that ``source`` has: how far ``text`` is read
    from ``source`` rather than said anew."""
    content = [token.lower() for token in _TOKEN.findall(text) if len(token) >= _CONTENT_WORD and token.isalpha()]
    if not content:
        return 0.0
    found = UserText.of(source)
    return sum(found.wrote(word) for word in content) / len(content)


def _key(token: str) -> str:
    """A name as compared with what the user wrote: "Tokyo's" is "tokyo"."""
    return re.sub(r"['’]s$", "", token.lower())


def _sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]


def _claim(sentence: str, user: UserText, *, dates_count: bool, numbers_count: bool) -> Claim | None:
    sentence = _HEDGE.sub("", sentence)
    if _ABOUT_ITSELF.match(sentence):
        return None
    if WORLD_CUE_CJK.search(sentence):
        new_runs = tuple(run for run in _CJK_RUN.findall(WORLD_CUE_CJK.sub(" ", sentence)) if run not in user.text)
        return Claim(sentence, new_runs) if new_runs else None
    relation = bool(WORLD_CUE.search(sentence) or SUPERLATIVE.search(sentence))
    dated = dates_count and bool(YEAR.search(sentence))
    if not (relation or dated):
        return None
    anchors = [a for a in _anchors(sentence) if numbers_count or not _NUMBER.search(a)]
    names = [a for a in anchors if not _NUMBER.search(a)]
    new = tuple(a for a in anchors if not user.wrote(a))
    # A year alone dates nothing: "In 2020 the world changed" needs a name to be about something.
    if new and (relation or names):
        return Claim(sentence, new)
    return None


def _anchors(sentence: str) -> list[str]:
    """Names (capitalised words past a line's start, or a line's first word when it is the subject) and numbers."""
    anchors = []
    for match in _TOKEN.finditer(sentence):
        token = match.group(0)
        if _NUMBER.search(token):
            anchors.append(token)
        elif _is_name(token) and (not _opens_line(sentence, match.start()) or _SUBJECT.match(sentence[match.end() :])):
            anchors.append(token.strip("."))
    return anchors


def _opens_line(text: str, at: int) -> bool:
    return not _TOKEN.search(text[text.rfind("\n", 0, at) + 1 : at])


def _is_name(token: str) -> bool:
    return token[0].isupper() and token.lower().strip(".") not in _NOT_NAMES
