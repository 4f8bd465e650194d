"""What an answer looks like, read from its text alone: code, verse, a refusal.

Code is split from prose so that each is read for what it is: the prose around
a function may state facts, and so may the strings and comments inside it
(``print("The capital of France is Berlin")``); the code's own tokens never are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .lexicon import REFUSAL, TASK_REFUSAL

__all__ = ["AnswerForm", "read_form", "refusal_rest"]

_FENCE = re.compile(r"```[^\n]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_INLINE = re.compile(r"`[^`\n]+`")
_CODE_LINE = re.compile(
    r"^\s*(def |class |import |from \S+ import |return\b|function\b|const |let |var |public |private |static |"
    r"#include|package |using |fn |func |SELECT\b|INSERT\b|UPDATE\b|CREATE TABLE|for\s*\(|while\s*\(|if\s*\(|"
    r"print\(|console\.log|System\.out|echo |\$ |[}{\])]\s*;?\s*$|<\w+[^>]*>|@\w+)"
    r"|[;{]\s*$|=>|\w+\s*=\s*[\w\"'\[{(]|\w+\(.*\)\s*:?\s*$",
    re.MULTILINE,
)
# Strings and comments inside code: where code can carry a sentence.
_LITERAL = re.compile(r"\"\"\"(.*?)\"\"\"|'''(.*?)'''|\"([^\"\n]*)\"|'([^'\n]*)'|(?:#|//|--)\s?([^\n]*)", re.DOTALL)
_VERSE_LINE_CHARS = 60


@dataclass(frozen=True)
class AnswerForm:
    code: str  # the answer's code, fenced or not
    prose: str  # everything else
    verse: bool  # short lines, like a poem or song

    @property
    def has_code(self) -> bool:
        return bool(self.code.strip())

    @property
    def literals(self) -> list[str]:
        """The strings and comments of the answer's code."""
        return [next(group for group in match.groups() if group is not None) for match in _LITERAL.finditer(self.code)]

    @property
    def readable(self) -> str:
        """What of the answer can state a claim: its prose and the strings and comments of its code."""
        return "\n\n".join([self.prose, *self.literals])


def read_form(answer: str) -> AnswerForm:
    fenced = [match.group(1) for match in _FENCE.finditer(answer)]
    prose = _FENCE.sub("\n\n", answer)
    code_lines: list[str] = []
    prose_lines: list[str] = []
    for line in prose.splitlines():
        (code_lines if _CODE_LINE.search(line) else prose_lines).append(line)
    # Unfenced code is believed only in numbers: one line with "=" is a sentence about an equation.
    if len(code_lines) >= 3 and len(code_lines) >= len([line for line in prose_lines if line.strip()]):
        fenced.append("\n".join(code_lines))
        prose = "\n".join(prose_lines)
    prose = _INLINE.sub(" ", prose)
    return AnswerForm(code="\n".join(fenced), prose=prose, verse=_is_verse(prose))


_REFUSAL_ENDS = re.compile(
    r"[.!?。！？\n](\s|$)|[,;]\s*(but|however|though|although)\b|\s+but\s+|[,;—–-]\s+(anyway|still)\b"
)


def refusal_rest(answer: str, *, task_only: bool = False) -> str | None:
    """What follows an answer's opening refusal ("I'm sorry, I can't ... However, ..."), or None if it opens
    with none. ``task_only``: only a refusal of the task itself counts ("I can't translate that"), not an opening
    such as "Unfortunately, I" that a rewritten text may well have."""
    opening = TASK_REFUSAL if task_only else REFUSAL
    match = opening.match(answer)
    if match is None:
        return None
    while match is not None:  # "I'm sorry, but I can't help with that": one refusal in two clauses
        end = _REFUSAL_ENDS.search(answer, match.end())
        answer = answer[end.end() :].strip() if end else ""
        match = opening.match(answer)
    return answer


def _is_verse(text: str) -> bool:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) < 4:
        return False
    short = [line for line in lines if len(line) <= _VERSE_LINE_CHARS]
    unended = [line for line in lines if not line.endswith((".", "?", "!"))]
    return len(short) >= 0.8 * len(lines) and len(unended) >= 0.5 * len(lines)
