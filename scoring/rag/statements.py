"""An answer as Trust-Eval reads it: statements (sentences) and the passages each one cites. Pure.

Trust-Eval (after ALCE) judges each sentence with the citations written in it,
so the split and the citation parser decide what gets judged. Models write
citations in many shapes (``[1][2]``, ``[1, 2]``, ``[1-3]``, ``[Document 1]``,
and after the full stop as well as before it), so the parser is lenient;
ids outside the request's documents are set aside and recorded instead of
sinking the whole statement as ALCE does, because one typo'd id says little
about the rest of the sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MAX_RANGE", "Statement", "parse_citations", "split_statements", "strip_citations"]

MAX_RANGE = 20  # a span such as [1-3] is expanded only up to this width; wider ones keep their ends

_ID = r"\d{1,4}"
_LABEL = r"(?:(?:doc(?:ument)?|source|passage|ref(?:erence)?)s?\.?\s*)?"
_SEPARATOR = r"\s*(?:,|;|&|-|\u2013|\u2014|\band\b|\bto\b)\s*"
_CITATION = re.compile(rf"\[\^?\s*{_LABEL}({_ID}(?:{_SEPARATOR}{_LABEL}{_ID})*)\s*\]", re.IGNORECASE)
_RANGE = re.compile(rf"({_ID})\s*(?:-|\u2013|\u2014|\bto\b)\s*{_LABEL}({_ID})", re.IGNORECASE)
_NUMBER = re.compile(_ID)
_CITATION_RUN = re.compile(rf"(?:\s*{_CITATION.pattern})+", re.IGNORECASE)

# A sentence ends at . ! or ? (with closing quotes or brackets), then any citations written after it,
# then whitespace before the next sentence; or, run together, at a citation's "]." before a capital.
_BOUNDARY = re.compile(
    rf"[.!?]+[\"')\u201d\u2019]*((?:\s*{_CITATION.pattern})*)\s+|(?<=\])[.!?]+(?=(?-i:[A-Z]))", re.IGNORECASE
)
_ABBREVIATIONS = frozenset(
    {
        "e.g",
        "i.e",
        "etc",
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "vs",
        "jr",
        "sr",
        "inc",
        "ltd",
        "co",
        "corp",
        "fig",
        "al",
        "approx",
        "u.s",
        "u.k",
    }
)
_LAST_WORD = re.compile(r"([A-Za-z][A-Za-z.]*)\.*$")
_LIST_MARKER = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+")
_WORD = re.compile(r"[^\W_]", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Statement:
    """One sentence of the answer: as written, without its citations, and the ids it cites.

    ``citations`` are the in-range document numbers in the order first cited;
    ``out_of_range`` the cited numbers that name no document.
    """

    text: str
    claim: str
    citations: tuple[int, ...] = ()
    out_of_range: tuple[int, ...] = ()


def _expand(group: str) -> list[int]:
    """``1, 2`` -> [1, 2]; ``1-3`` -> [1, 2, 3]; ``Document 1 and Document 4`` -> [1, 4]."""
    numbers: list[int] = []
    spans = {m.start(): m for m in _RANGE.finditer(group)}
    position = 0
    for number in _NUMBER.finditer(group):
        if number.start() < position:
            continue
        span = spans.get(number.start())
        if span is None:
            numbers.append(int(number.group()))
            continue
        low, high = int(span.group(1)), int(span.group(2))
        numbers.extend(range(low, high + 1) if 0 <= high - low <= MAX_RANGE else (low, high))
        position = span.end()
    return numbers


def parse_citations(text: str, documents: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(cited document numbers in 1..documents, cited numbers outside it), each deduplicated in order."""
    cited = [n for match in _CITATION.finditer(text) for n in _expand(match.group(1))]
    valid = dict.fromkeys(n for n in cited if 1 <= n <= documents)
    invalid = dict.fromkeys(n for n in cited if not 1 <= n <= documents)
    return tuple(valid), tuple(invalid)


def strip_citations(text: str) -> str:
    """The text without citation marks, as the judge should read it ("capital [1]." -> "capital.")."""
    stripped = _CITATION_RUN.sub("", text)
    return re.sub(r"\s+([.,;:!?])", r"\1", " ".join(stripped.split()))


def _is_abbreviation(before: str) -> bool:
    word = _LAST_WORD.search(before)
    if word is None:
        return False
    token = word.group(1).lower().rstrip(".")
    return token in _ABBREVIATIONS or len(token) == 1  # single letters: initials ("J. K. Rowling")


def _sentences(block: str) -> list[str]:
    pieces, start = [], 0
    for boundary in _BOUNDARY.finditer(block):
        head = block[start : boundary.start()]
        if _is_abbreviation(head) and not boundary.group(1):
            continue
        pieces.append(block[start : boundary.end()].strip())
        start = boundary.end()
    pieces.append(block[start:].strip())
    return [piece for piece in pieces if piece]


def split_statements(answer: str, documents: int) -> list[Statement]:
    """The answer's sentences, line by line (list markers dropped), with their citations parsed.

    A fragment that is nothing but citations (a line "[1][2]" under a
    sentence) is given to the sentence before it; text without a letter or
    digit is dropped.
    """
    statements: list[Statement] = []
    for line in answer.splitlines():
        for sentence in _sentences(_LIST_MARKER.sub("", line)):
            claim = strip_citations(sentence)
            if not _WORD.search(claim):
                if statements and _CITATION.search(sentence):
                    previous = statements.pop()
                    sentence = f"{previous.text} {sentence}"
                    claim = previous.claim
                else:
                    continue
            citations, out_of_range = parse_citations(sentence, documents)
            statements.append(Statement(sentence, claim, citations, out_of_range))
    return statements
