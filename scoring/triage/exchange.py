"""One scored exchange as triage reads it: the user's last turn, the user's earlier turns, and the answer.

The system prompt and earlier assistant turns are left out on purpose. A system
prompt says how to answer ("you are a poet"), not what the answer is, and
whoever writes it must not be able to make a factual answer unscored: neither
by naming a kind nor by supplying the facts the answer repeats. Earlier
assistant turns are the model's own words, so facts the answer takes from them
are still the model's claims ("make it shorter" after an explanation is as
checkable as the explanation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..jobs import message_text
from ..types import ScoringJob

__all__ = ["Exchange"]


@dataclass(frozen=True)
class Exchange:
    question: str  # the last user message
    answer: str  # the answer's text content (tool-call arguments are not content)
    earlier_user_turns: tuple[str, ...] = ()  # oldest first
    has_tool_calls: bool = False

    @classmethod
    def from_messages(
        cls, messages: Sequence[Mapping[str, Any]], answer: str, *, has_tool_calls: bool = False
    ) -> Exchange:
        """From a chat request's messages and the answer's content, as the gateway has them."""
        user_turns = [message_text(dict(m)) for m in messages if m.get("role") == "user"]
        question = user_turns.pop() if user_turns else ""
        return cls(question, answer, tuple(user_turns), has_tool_calls)

    @classmethod
    def from_job(cls, job: ScoringJob, *, has_tool_calls: bool = False) -> Exchange:
        """From a scoring job: its question, the user turns of its context, its answer."""
        earlier = tuple(message_text(m) for m in job.context if m.get("role") == "user")
        return cls(job.question, job.answer, earlier, has_tool_calls)

    def within(self, *, turns: int, turn_chars: int, answer_chars: int) -> Exchange:
        """The exchange as far as triage reads it: the last ``turns`` earlier user turns, each user turn's start and
        end (a request's instruction opens or closes it), and the answer's start, so that no conversation costs
        triage more than a few milliseconds."""
        return replace(
            self,
            question=_ends(self.question, turn_chars),
            earlier_user_turns=tuple(_ends(turn, turn_chars) for turn in self.earlier_user_turns[-turns:]),
            answer=self.answer[:answer_chars],
        )

    @property
    def user_text(self) -> str:
        """Everything the user wrote: what an answer may repeat without making a claim of its own."""
        return "\n".join((*self.earlier_user_turns, self.question))


def _ends(text: str, chars: int) -> str:
    """``text``'s first three quarters of ``chars`` and its last quarter, or all of it when it is that short."""
    if len(text) <= chars:
        return text
    tail = chars // 4
    return f"{text[: chars - tail]}\n…\n{text[-tail:]}"
