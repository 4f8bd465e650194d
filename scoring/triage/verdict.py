"""What triage says about one answer: its kind, why, and whether it makes claims a score can check.

Only a ``factual`` answer is fact-checked by default: a trust score re-asks the
model about the answer's claims and looks for evidence of them, so it means
something only where the answer states something about the world. Every other
kind has nothing such a score could check (a poem, code, "thanks", advice, the
user's own text rewritten, a sum), and ``tool_call`` and ``empty`` have no content
at all; they are told apart so that operators see their traffic mix and can
choose which kinds are scored (``scoring.applicability``).
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ANSWER_KINDS", "CONTENT_KINDS", "AnswerKind", "ContentKind", "Verdict"]

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


class Verdict(BaseModel):
    """Triage's verdict on one answer. ``kind`` and ``reason`` are what a record's ``applicability`` carries."""

    model_config = ConfigDict(frozen=True)

    kind: AnswerKind
    # A short sentence a person reads: what in the request or the answer decided the kind.
    reason: str = Field(max_length=300)

    @property
    def checkable(self) -> bool:
        """Whether the answer makes claims a trust score can check (only factual answers do)."""
        return self.kind == "factual"

    @property
    def has_content(self) -> bool:
        """False for an answer of only tool calls, or none at all: unscored rather than not applicable."""
        return self.kind not in ("tool_call", "empty")
