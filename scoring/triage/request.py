"""A request split into what it asks (the instruction) and the text it hands over to work on (supplied).

"Fix the grammar: me and him goes home" asks for a rewrite whatever the
supplied part says, and a question quoted inside a request ("Translate 'Where
is the station?'") is material, not a question to answer. Code blocks, quoted
spans, the part after an instruction's colon, and the body of a message whose
first or last line is a short instruction are supplied text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Request", "split_request", "words"]

_FENCE = re.compile(r"```.*?(```|\Z)", re.DOTALL)
# Quoted spans: straight and typographic double quotes, guillemets, CJK corner brackets, and single quotes that
# open after a space or colon (so that an apostrophe inside a word does not open one).
_QUOTED = re.compile(r"\"[^\"\n]{2,}\"|“[^”]{2,}”|«[^»]{2,}»|「[^」]{2,}」|(?<![\w])'[^'\n]{2,}'(?![\w])|‘[^’]{2,}’")
_COLON = re.compile(r"[:：]\s")
# "Can you make this paragraph shorter? Our company, ...": a first sentence that points at the text after it.
_POINTER = re.compile(
    r"^(?P<head>[^.?!:\n]{0,150}\b(this|these|the following|below|my)\b[^.?!:\n]{0,80}[.?!:])\s+(?P<body>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_INSTRUCTION_WORDS = 30  # a line this short, beside a longer body, is the instruction
_BODY_WORDS = 12


def words(text: str) -> list[str]:
    return _WORD.findall(text)


@dataclass(frozen=True)
class Request:
    text: str  # the whole message
    instruction: str  # what it asks, supplied text cut out
    supplied: str  # the text it hands over

    @property
    def has_supplied_text(self) -> bool:
        return bool(words(self.supplied))


def split_request(text: str) -> Request:
    supplied: list[str] = []

    def cut(match: re.Match[str]) -> str:
        supplied.append(match.group(0))
        return " «text» "

    instruction = _QUOTED.sub(cut, _FENCE.sub(cut, text))
    head, body = _instruction_and_body(instruction)
    if body:
        supplied.append(body)
    return Request(text=text, instruction=head.strip(), supplied="\n".join(supplied))


def _instruction_and_body(text: str) -> tuple[str, str]:
    """The instruction before a colon or on a short first or last line, and the body beside it."""
    colon = _COLON.search(text)
    if colon and len(words(text[: colon.start()])) <= _INSTRUCTION_WORDS and words(text[colon.end() :]):
        return text[: colon.start()], text[colon.end() :]
    pointer = _POINTER.match(text)
    if pointer and len(words(pointer.group("body"))) >= _BODY_WORDS:
        return pointer.group("head"), pointer.group("body")
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) >= 2:
        for instruction, body in ((lines[0], lines[1:]), (lines[-1], lines[:-1])):
            body_text = "\n".join(body)
            if len(words(instruction)) <= _INSTRUCTION_WORDS and len(words(body_text)) >= _BODY_WORDS:
                return instruction, body_text
    return text, ""
