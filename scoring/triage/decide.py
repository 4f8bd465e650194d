"""Triage: the kind of one answer, from its request and the answer together. Pure, CPU only, no model.

The request gives a presumption (``intent``); the answer has the last word in
one direction only: an answer that states facts is factual whatever the request
called it ("a poem about the capital of France" that names a capital is
checked), while a request for facts stays factual whatever its answer looks
like. So a request cannot dress a factual answer up as a poem, code or a
rewrite to escape scoring; at worst triage scores something it could have
skipped.

Tool calls: their arguments are addressed to a tool, not claims made to the
user, and are not read; content beside them is triaged as content. An answer of
only tool calls (or no content at all) has kind ``tool_call`` (``empty``), which
is unscored rather than not applicable, so an acting policy's rule for unscored
answers decides it.
"""

from __future__ import annotations

import re

from .claims import Claim, UserText, borrowed_share, find_claims, named_things, names_in_strings
from .exchange import Exchange
from .form import AnswerForm, read_form, refusal_rest
from .intent import Intent, request_intent
from .verdict import Verdict

__all__ = ["triage"]

_QUOTE_CHARS = 80
# How much of each text triage reads: a 20,000-character answer read whole costs tens of milliseconds.
_TURNS = 10  # earlier user turns: a follow-up leans on the last few, and older names only make more answers checkable
_TURN_CHARS = 1_200
_ANSWER_CHARS = 6_000
_SUPPLIED_WORDS = 12  # a text this long, handed over with a question, may be what the question is about
_BORROWED = 0.6  # the share of an answer's content words taken from that text, for it to be read from it
_REASON_CHARS = 300
_SAYS_MORE_WORDS = 12  # past a refusal, this many words are an answer of their own
# What a refusal offers instead ("I can help you write an honest message"): still a refusal.
_OFFER = re.compile(
    r"\b(i can|i could|i('d| would) be (happy|glad)|happy to|glad to|instead|if you('d| would) like|let me know|"
    r"can help|could help|may help|might help|"
    r"please (consider|reach out|contact|talk|seek)|reach out|talk(ing)? to someone|helpline|hotline|professional)\b",
    re.I,
)
# Kinds whose answers carry the user's own text: a date in a translation is the user's, not a new claim.
_USER_TEXT_KINDS = ("rewrite", "summary")
# Kinds whose answers may name the fact the request is about ("a poem about the first man on the moon", "a function
# that returns the capital of Italy": code's strings and comments are read as well as its prose).
_FRAMED_KINDS = ("creative", "opinion", "conversation", "code", None)


def triage(exchange: Exchange) -> Verdict:
    """The verdict on ``exchange``'s answer: its kind, why, and so whether it is checkable."""
    if not exchange.answer.strip():
        if exchange.has_tool_calls:
            return Verdict(kind="tool_call", reason="only tool calls: their arguments are not claims to the user")
        return Verdict(kind="empty", reason="the answer has no content")
    verdict = _content_verdict(exchange.within(turns=_TURNS, turn_chars=_TURN_CHARS, answer_chars=_ANSWER_CHARS))
    if len(exchange.answer) > _ANSWER_CHARS and not verdict.checkable:
        # What lies past the part read could state facts: err towards scoring, never towards a way around it.
        verdict = Verdict(
            kind="factual",
            reason=f"longer than the {_ANSWER_CHARS:,} characters triage reads (their kind: {verdict.kind}), so scored",
        )
    if exchange.has_tool_calls:
        return verdict.model_copy(update={"reason": _cut(f"content beside tool calls: {verdict.reason}")})
    return verdict


def _content_verdict(exchange: Exchange) -> Verdict:
    intent = request_intent(exchange.question, exchange.earlier_user_turns)
    user_text = UserText.of(exchange.user_text)
    rest = refusal_rest(exchange.answer.strip(), task_only=intent.kind in _USER_TEXT_KINDS)
    if rest is not None:
        refused = _refusal(intent, rest, user_text)
        if refused is not None:
            return refused
    form = read_form(exchange.answer)
    claims = find_claims(
        form.readable, user_text, dates_count=intent.kind not in _USER_TEXT_KINDS, numbers_count=intent.kind != "math"
    )
    if intent.kind == "factual" and not claims and _read_from_supplied(exchange.answer, intent, user_text):
        return Verdict(kind="summary", reason="answers a question about text the user supplied, from that text")
    if intent.kind == "factual" and not (intent.weak and not claims and not named_things(form.prose, user_text)):
        return Verdict(kind="factual", reason=intent.reason)
    if claims:
        return Verdict(kind="factual", reason=_states_facts(claims[0], intent))
    if intent.about_a_fact and intent.kind in _FRAMED_KINDS:
        named = [*named_things(form.prose, user_text), *names_in_strings(form.literals, user_text)]
        names = [thing for thing in named if not thing[0].isdigit()]
        if names:
            return Verdict(kind="factual", reason=_cut(f"the request is about a fact, and the answer names {names[0]}"))
    if intent.kind is not None and intent.kind != "factual":
        return Verdict(kind=intent.kind, reason=intent.reason)
    return _by_answer(form, intent, user_text)


def _read_from_supplied(answer: str, intent: Intent, user_text: UserText) -> bool:
    """A question about a text the user handed over ("Here's a review: '...'. What are the complaints?"), answered
    with that text's own words and naming nothing it does not: the answer is the user's text, read back."""
    return (
        len(intent.supplied.split()) >= _SUPPLIED_WORDS
        and not named_things(answer, user_text)
        and borrowed_share(answer, intent.supplied) >= _BORROWED
    )


def _refusal(intent: Intent, rest: str, user_text: UserText) -> Verdict | None:
    """A refusal that goes on to answer is an answer: factual if it states facts, or answers a factual request;
    of the request's kind if it goes on at length (None: read the answer as any other)."""
    claims = find_claims(rest, user_text)
    if claims:
        return Verdict(kind="factual", reason=_cut(f"declines, then states facts: {_quote(claims[0])}"))
    says_more = len(rest.split()) >= _SAYS_MORE_WORDS and not _OFFER.search(rest)
    if intent.kind == "factual" and (named_things(rest, user_text) or says_more):
        return Verdict(kind="factual", reason=_cut(f"declines, then answers: {intent.reason}"))
    if intent.kind not in (None, "factual") and says_more:
        return None
    return Verdict(kind="refusal", reason="the answer declines and says nothing else")


def _by_answer(form: AnswerForm, intent: Intent, user_text: UserText) -> Verdict:
    """A request that does not say what it asks, or asks only weakly for facts: the answer's form decides."""
    if form.has_code:
        return Verdict(kind="code", reason="the answer is code")
    if form.verse:
        return Verdict(kind="creative", reason="the answer is verse")
    if intent.kind is None and named_things(form.prose, user_text):
        return Verdict(kind="factual", reason="the answer names things, and the request does not say what it asks")
    if intent.weak:
        return Verdict(kind="creative", reason=_cut(f"{intent.reason}, and the answer names nothing to check"))
    return Verdict(kind="conversation", reason="the answer names nothing to check, and the request asks no question")


def _states_facts(claim: Claim, intent: Intent) -> str:
    asked = f" (the request {intent.reason})" if intent.kind not in (None, "factual") else ""
    return _cut(f"the answer states facts: {_quote(claim)}{asked}")


def _quote(claim: Claim) -> str:
    return f"“{_cut(' '.join(claim.sentence.split()), _QUOTE_CHARS)}”"


def _cut(text: str, limit: int = _REASON_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
