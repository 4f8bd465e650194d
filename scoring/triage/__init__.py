"""Triage: which answers make claims a trust score can check, decided before any scoring call.

``triage(Exchange.from_messages(messages, answer))`` returns a ``Verdict``: the
answer's kind (factual, creative, code, conversation, opinion, rewrite,
summary, math, refusal; tool_call and empty for answers without content), a
short reason, and ``checkable``. Regular expressions over the request and the
answer, no model: it runs where the gateway decides to score, at a fraction of
a millisecond per answer (docs/eval/triage.md).
"""

from .decide import triage
from .exchange import Exchange
from .verdict import ANSWER_KINDS, CONTENT_KINDS, AnswerKind, ContentKind, Verdict

__all__ = ["ANSWER_KINDS", "CONTENT_KINDS", "AnswerKind", "ContentKind", "Exchange", "Verdict", "triage"]
