"""The kinds of answer triage tells apart, as a vocabulary of their own.

The settings (which kinds an operator scores) and the records (the kind of a
not_applicable answer) name them as well as triage does; they live here, apart
from triage's rules, so that reading the settings never compiles those rules.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["ANSWER_KINDS", "CONTENT_KINDS", "AnswerKind", "ContentKind"]

# The kinds of an answer with content, the ones an operator chooses to score or not:
# factual: claims about the world, short answers and explanations alike; creative: poems, stories, jokes, slogans,
# letters drafted for the user; code; conversation: greetings, thanks, small talk, talk about the assistant itself;
# opinion: opinions, advice, recommendations; rewrite: the user's own text rewritten, corrected, translated,
# reformatted or classified; summary: a summary of, or an answer read from, text the user supplied; math: a
# calculation; refusal: the answer declines and says nothing else.
ContentKind = Literal["factual", "creative", "code", "conversation", "opinion", "rewrite", "summary", "math", "refusal"]
# An answer without content: only tool calls, or nothing at all. Not a kind of content an operator chooses: such an
# answer is unscored (the record says skipped), and an acting policy's rule for unscored answers decides it.
AnswerKind = ContentKind | Literal["tool_call", "empty"]

CONTENT_KINDS: tuple[ContentKind, ...] = get_args(ContentKind)
ANSWER_KINDS: tuple[AnswerKind, ...] = (*CONTENT_KINDS, "tool_call", "empty")
