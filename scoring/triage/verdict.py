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

from pydantic import BaseModel, ConfigDict, Field

from ..answer_kinds import ANSWER_KINDS, CONTENT_KINDS, AnswerKind, ContentKind

__all__ = ["ANSWER_KINDS", "CONTENT_KINDS", "AnswerKind", "ContentKind", "Verdict"]


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
