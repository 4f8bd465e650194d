"""Did the answer decline to answer from the documents? Pure.

Trust-Eval calls an output a refusal when its refusal sentence ("I apologize,
but I couldn't find an answer") fuzzily appears in it: ``fuzz.partial_ratio``
over normalised text above 85. We keep that test and threshold, with more
template sentences because live models word refusals freely, and add
patterns for the forms no template can cover: "the documents do not
contain/mention ...", "none of the passages ...", "I cannot answer/determine
...", "I don't know". Matching is done per statement, against the template
only (a statement shorter than a template is compared whole), so that a short
"I apologize." is not a refusal merely because it is part of the template.

A statement that cites a document is never a refusal: it asserts something
from the documents. The answer is a refusal when it has a refusal statement
and says nothing else of substance; an answer that refuses in part and
answers in part is a partial refusal, and its answering statements are judged.
(Trust-Eval counts any output with its flag in it as refused; a gateway cares
whether the user got an answer.)
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Literal

from .statements import Statement

__all__ = [
    "REFUSAL_TEMPLATES",
    "THRESHOLD",
    "RefusalKind",
    "is_refusal_statement",
    "normalize",
    "partial_ratio",
    "refusal_kind",
]

THRESHOLD = 85  # Trust-Eval's rejection_threshold: a match scores above it
RefusalKind = Literal["answer", "partial", "refusal"]
MAX_REFUSAL_CHARS = 400
FILLER_WORDS = 4  # a statement this short beside a refusal ("I'm sorry.") adds nothing to it

# Trust-Eval's rejection flag first, then phrasings live models use for the same thing.
REFUSAL_TEMPLATES = (
    "I apologize, but I couldn't find an answer",
    "I could not find an answer to your question in the search results",
    "I cannot answer this question based on the provided documents",
    "I don't have enough information to answer this question",
    "I am unable to answer this question",
    "There is no information about this in the provided documents",
    "The answer is not in the provided documents",
    "None of the provided documents mention",
)

_SOURCE = r"(?:documents?|passages?|search results?|sources?|context|texts?|excerpts?|snippets?|references?)"
_DENIAL = (
    r"(?:do(?:es)?\s*(?:not|n't)|did\s*(?:not|n't)|fail(?:s|ed)?\s+to|cannot|can't|lacks?"
    r"|(?:is|are)\s+(?:not|n't))"
)
_TELL = (
    r"(?:contain|mention|provide|include|say|state|specify|discuss|address|cover|answer|give|offer|indicate"
    r"|describe|reference|support|list|identify|reveal|tell)"
)
_UNABLE = (
    r"(?:\s+(?:cannot|can't|can\s+not|couldn't|could\s+not|was\s+unable\s+to)"
    r"|(?:'m|\s+am)\s+(?:unable|not\s+able)\s+to)"
)
_THE = r"(?:the\s+|these\s+|those\s+|any\s+)?(?:\w+\s+)?"
_ABSENCE = re.compile(
    "|".join(
        (
            rf"\b{_SOURCE}\b[^.!?]{{0,40}}?\b{_DENIAL}\s+(?:\w+\s+){{0,2}}?{_TELL}",  # the documents do not mention
            rf"\b(?:none|neither)\s+of\s+{_THE}{_SOURCE}\b",  # none of the passages
            rf"\bno\s+(?:information|mention|details?|data|answer|evidence)\b[^.!?]{{0,60}}?"
            rf"\b(?:in|within|from)\s+{_THE}{_SOURCE}\b",  # no mention of X in the provided passages
            rf"\bnot\s+(?:mentioned|found|provided|stated|specified|given|included|covered|available)\s+"
            rf"in\s+{_THE}{_SOURCE}\b",  # not found in the documents
            rf"\bI{_UNABLE}\s+(?:answer|determine|confirm|verify|find\s+(?:an?\s+|the\s+|any\s+)?"
            rf"(?:answer|information|mention|details?))\b",  # I cannot answer / I could not find any information
            r"\bI\s+(?:do\s+not|don't)\s+know\b",
        )
    ),
    re.IGNORECASE,
)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize(text: str) -> str:
    """Trust-Eval's ``normalize_answer``: lower case, no punctuation, no articles, single spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def partial_ratio(template: str, text: str) -> int:
    """fuzzywuzzy's ``partial_ratio`` with ``template`` always the needle (0..100).

    The best similarity between the template and a template-long window of
    ``text``, the windows being aligned on the blocks the two share; a text
    shorter than the template is compared whole.
    """
    if not template or not text:
        return 0
    if len(text) <= len(template):
        return round(100 * SequenceMatcher(None, template, text, autojunk=False).ratio())
    best = 0.0
    for start_t, start_x, _ in SequenceMatcher(None, template, text, autojunk=False).get_matching_blocks():
        window_start = max(start_x - start_t, 0)
        window = text[window_start : window_start + len(template)]
        best = max(best, SequenceMatcher(None, template, window, autojunk=False).ratio())
    return round(100 * best)


_NORMALIZED_TEMPLATES = tuple(normalize(template) for template in REFUSAL_TEMPLATES)


def _may_match(template: str, words: set[str]) -> bool:
    """A cheap bound: text sharing under half of a template's words cannot be 85% like it.

    ``partial_ratio`` runs a sequence match per aligned window; without this
    an answer of a few hundred uncited sentences costs seconds of the event
    loop the gateway serves traffic on.
    """
    needed = template.split()
    return 2 * sum(word in words for word in needed) >= len(needed)


def is_refusal_statement(statement: Statement) -> bool:
    """An uncited statement that declines: it matches a template, or says the documents lack the answer.

    Statements longer than ``MAX_REFUSAL_CHARS`` are not refusals: a refusal is a sentence, not a page.
    """
    if statement.citations or len(statement.claim) > MAX_REFUSAL_CHARS:
        return False
    claim = statement.claim.replace("\u2019", "'")
    if _ABSENCE.search(claim):
        return True
    text = normalize(claim)
    words = set(text.split())
    return any(
        _may_match(template, words) and partial_ratio(template, text) > THRESHOLD for template in _NORMALIZED_TEMPLATES
    )


def _is_filler(statement: Statement) -> bool:
    return not statement.citations and len(statement.claim.split()) <= FILLER_WORDS


def refusal_kind(statements: Sequence[Statement], refusing: Sequence[bool]) -> RefusalKind:
    """ "refusal": a refusal statement and only courtesy words beside it; "partial": refusal statements
    beside statements that answer; "answer": no refusal statement. ``refusing`` is per statement."""
    if not any(refusing):
        return "answer"
    if all(refuses or _is_filler(s) for s, refuses in zip(statements, refusing, strict=True)):
        return "refusal"
    return "partial"
