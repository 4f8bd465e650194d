"""What a request asks for, read from the user's turns alone: the first half of triage.

The request's kind is a presumption that the answer can overturn (``decide``):
a poem that states facts is factual, and a vague request is decided by its
answer. A request that asks for facts is never overturned by the request's
own framing: "what do you think the capital of Peru is?" asks a fact.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from . import lexicon as lx
from .request import Request, split_request, words
from .verdict import ContentKind

__all__ = ["Intent", "request_intent"]

_CREATE_WINDOW = 10  # words between "write" and "poem" ("write me a short, funny poem")
_CREATE_WINDOW_CHARS = 120  # as far as such words reach
_CREATE_VERBS = (
    20  # verbs of making looked at: a request that says "write" a thousand times is not read a thousand times
)
_MAX_FOLLOW_UP_DEPTH = 8
_BODY_WORDS = 12  # an earlier turn this long may be a text of the user's that a later turn asks to rework
_CONVERSATIONAL_LEFTOVER = 2  # words beside greetings and thanks that keep a message small talk ("thanks, Sam")


@dataclass(frozen=True)
class Intent:
    kind: ContentKind | None  # None: the request alone does not say
    reason: str
    # A weak presumption of facts ("describe a sunset", "write a paragraph about ..."): the answer must name
    # something for it to hold.
    weak: bool = False
    # The request's topic is a fact about a named thing ("a poem about the first man on the moon"): a name the
    # answer gives for it is a claim, whatever the form.
    about_a_fact: bool = False
    supplied: str = ""  # text the request hands over (quoted, after a colon, the body under a short instruction)


_UNKNOWN = Intent(None, "the request does not say what it asks for")
_HOW_IN_CODE = lx.Words(r"\bhow (do|can|would|should|to) |\bshow me\b|\bexample\b|\bsyntax\b|\bin\s*$")
# "Tabs or spaces?": a bare choice between two things asks for a preference.
_BARE_CHOICE = re.compile(
    r"^(?!\s*(is|are|was|were|do|does|did|can|what|which|who|where|when|how|why)\b)"
    r"[\w' -]{1,30}\bor\b[\w' -]{1,30}\?\s*$",
    re.I,
)
_INLINE_CODE = re.compile(r"`[^`\n]*[=(){};<>][^`\n]*`")
_CODE_TROUBLE = lx.Words(
    r"\b(code|error|compiler|compile|compiles|bug|exception|crash(es)?|warning|syntax|stack trace|traceback|loop|"
    r"function|variable|method|print(s|ing)?|returns?|output)\b"
)
# "Describe a sunset" paints a scene; "describe the water cycle" asks for knowledge.
_DESCRIBE_A_SCENE = lx.Words(
    r"\b(describe|décris|beschreibe?|descrivi|descreva)\s+(a|an|your|my|un|une|ein|eine|uno|una|um|uma)\b"
)


def request_intent(question: str, earlier_user_turns: Sequence[str] = (), depth: int = 0) -> Intent:
    intent = _request_intent(question, earlier_user_turns, depth)
    request = split_request(question)
    about_a_fact = bool(lx.WORLD_CUE_ASK.search(request.instruction or question))
    return replace(intent, about_a_fact=about_a_fact, supplied=request.supplied)


def _request_intent(question: str, earlier_user_turns: Sequence[str], depth: int) -> Intent:
    request = split_request(question)
    if _only_conversation(request.text):
        return Intent("conversation", "greetings, thanks or small talk")
    if earlier_user_turns and depth < _MAX_FOLLOW_UP_DEPTH and _continues(request):
        before = request_intent(earlier_user_turns[-1], earlier_user_turns[:-1], depth + 1)
        if before.kind is not None:
            return Intent(before.kind, f"a follow-up to an earlier request: {before.reason}", before.weak)
        edits = lx.INHERITING_EDIT.fullmatch(request.text.strip().rstrip(" ?.!"))
        if edits and len(words(earlier_user_turns[-1])) >= _BODY_WORDS:
            return Intent("rewrite", "reworks text the user gave in an earlier turn")
    supplied = request.has_supplied_text or any(len(words(turn)) >= 40 for turn in earlier_user_turns)
    for text in dict.fromkeys((request.instruction, request.text)):
        intent = _classify(text, request, supplied)
        if intent is not None:
            return intent
    return _UNKNOWN


def _only_conversation(text: str) -> bool:
    rest = lx.CONVERSATION.sub(" ", text)
    leftover = words(rest)
    return len(leftover) < len(words(text)) and (
        not leftover or (len(leftover) <= _CONVERSATIONAL_LEFTOVER and "?" not in rest)
    )


def _continues(request: Request) -> bool:
    """An elliptical turn ("And its population?", "Make it shorter") that leans on the turn before."""
    text = request.text.strip()
    return bool(lx.FOLLOW_UP.search(text) or lx.INHERITING_EDIT.fullmatch(text.rstrip(" ?.!")))


def _classify(text: str, request: Request, supplied: bool) -> Intent | None:
    for classify in (_code, _supplied_text, _composition, _math, _opinion, _fact):
        intent = classify(text, request, supplied)
        if intent is not None:
            return intent
    return None


def _code(text: str, request: Request, supplied: bool) -> Intent | None:
    if lx.CODE_ASK.search(text):
        return Intent("code", "asks for code, or about code")
    language = lx.CODE_LANGUAGE.search(text)
    if language and (lx.CREATE.search(text) or _HOW_IN_CODE.search(text)):
        return Intent("code", f"asks for {language.group(0)} code")
    if language and _CODE_TROUBLE.search(text):
        return Intent("code", f"asks about {language.group(0)} code")
    if "```" in request.text or _INLINE_CODE.search(request.text):
        return Intent("code", "asks about code it supplies")
    return None


def _supplied_text(text: str, request: Request, supplied: bool) -> Intent | None:
    """Summaries and rewrites of the user's own text; without such text, a "summary" is a question."""
    if supplied and (lx.SUMMARY.search(text) or lx.SUMMARY_CJK.search(text)):
        return Intent("summary", "summarises text the user supplied")
    rewrite = lx.REWRITE.search(text) or lx.REWRITE_CJK.search(text)
    if rewrite and (supplied or _translates(rewrite.group(0))):
        return Intent("rewrite", f"asks to rework text the user supplied ({rewrite.group(0).lower()})")
    if supplied and lx.READ_SUPPLIED.search(text):
        return Intent("summary", "asks about text the user supplied")
    return None


def _translates(verb: str) -> bool:
    return bool(re.match(r"trad|transl|übersetz|vertaal|перевед|how do|what is|翻", verb, re.I))


def _composition(text: str, request: Request, supplied: bool) -> Intent | None:
    """Writing asked for: creative (a poem, a joke, a letter) or expository (a paragraph on the history of Rome)."""
    if lx.DIRECT_QUESTION.search(text) and not lx.OPINION.search(text):
        return None  # "As a pirate, what is the capital of France?": the question is what is asked
    if lx.IMAGINE.search(text):
        return Intent("creative", "asks to imagine or play a role")
    genre = _created(text, lx.CREATIVE_GENRE) or lx.CREATIVE_GENRE_CJK.search(text)
    if genre is not None:
        return Intent("creative", f"asks for creative writing ({genre.group(0).strip().lower()})")
    expository = _created(text, lx.EXPOSITORY_GENRE)
    if expository is None:
        return None
    if lx.PERSUASIVE.search(text):
        return Intent("opinion", "asks for a piece that argues a view")
    if lx.PERSONAL_TOPIC.search(text):
        return Intent("creative", "asks for writing about the user's own life")
    return Intent("factual", f"asks for an informative {expository.group(0).lower()}", weak=True)


def _created(text: str, genre: lx.Words) -> re.Match[str] | None:
    """``genre`` named within a few words after a verb of making ("write me a short poem", "tell me a joke")."""
    for verb in itertools.islice(lx.CREATE.finditer(text), _CREATE_VERBS):
        window = text[verb.end() : verb.end() + _CREATE_WINDOW_CHARS]
        found = genre.search(window)
        if found is not None and len(words(window[: found.start()])) <= _CREATE_WINDOW:
            return found
    return None


def _math(text: str, request: Request, supplied: bool) -> Intent | None:
    return Intent("math", "asks for a calculation") if lx.MATH.search(text) else None


def _opinion(text: str, request: Request, supplied: bool) -> Intent | None:
    opinion = lx.OPINION.search(text) or lx.ADVICE.search(text) or _BARE_CHOICE.search(text)
    if opinion is None:
        return None
    if lx.WORLD_CUE_ASK.search(text) and (lx.QUESTION_WORD.search(text) or "?" in text):
        return Intent("factual", "asks a fact, phrased as a request for an opinion")
    return Intent("opinion", f"asks for an opinion or advice ({opinion.group(0).strip().lower()})")


def _fact(text: str, request: Request, supplied: bool) -> Intent | None:
    asked = lx.QUESTION_WORD.search(text) or lx.YES_NO_QUESTION.search(text) or lx.QUESTION_CJK.search(text)
    if asked is not None:
        return Intent("factual", f"asks a question ({asked.group(0).strip().lower()} …)")
    command = lx.KNOWLEDGE_ASK.search(text)
    if command is not None:
        weak = bool(_DESCRIBE_A_SCENE.search(text))
        return Intent("factual", f"asks for knowledge ({command.group(0).lower()} …)", weak=weak)
    if text.rstrip().endswith(("?", "？")):
        return Intent("factual", "asks a question")
    if lx.WORLD_CUE_ASK.search(text):
        return Intent("factual", "asks about a named thing's facts")
    return None
