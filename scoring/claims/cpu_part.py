"""Claim splitting's CPU work, registered with the CPU pool (``scoring.cpu_pool``), which knows nothing of it.

The part is a spaCy pipeline with its dependency parser (Trust_BC's distractor generator loads one without:
it needs no parse), loaded once per process by ``claim_parser_loader``; the work is splitting one answer.
Only the question, the answer and the claims found cross to a worker process.
"""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING

from ..cpu_pool import CpuWork, Part, PartLoader
from .selection import select_claims
from .split import split_claims

if TYPE_CHECKING:  # spaCy loads only where the parser is loaded
    from spacy.language import Language

    from ..types import Claim

__all__ = ["CLAIM_PARSER", "QUESTION_CHARS_READ", "ClaimParser", "claim_parser_loader", "split_answer"]

# Of the question, only its close is parsed, for what a pronoun that opens the answer stands for.
QUESTION_CHARS_READ = 300


class ClaimParser:
    """The parsing pipeline, behind a lock: spaCy is not safe to call from several threads at once."""

    def __init__(self, nlp: Language) -> None:
        self._nlp = nlp
        self._lock = threading.Lock()

    def claims(self, question: str, answer: str, max_claims: int) -> list[Claim]:
        with self._lock:
            question_doc = self._nlp(question[-QUESTION_CHARS_READ:])
            answer_doc = self._nlp(answer)
        return select_claims(answer, split_claims(answer_doc, question_doc), max_claims)


CLAIM_PARSER: Part[ClaimParser] = Part("claim_parser")


def _load(model: str) -> ClaimParser:
    from ..consistency.thinc_backend import load_thinc_without_torch

    load_thinc_without_torch()  # before spaCy, so that it finds thinc loaded without torch
    import spacy

    return ClaimParser(spacy.load(model))


def claim_parser_loader(model: str) -> PartLoader:
    """Loads the spaCy pipeline ``model`` (``consistency.spacy_model``), parser included."""
    return functools.partial(_load, model)


def _split(parser: ClaimParser, question: str, answer: str, max_claims: int) -> list[Claim]:
    return parser.claims(question, answer, max_claims)


async def split_answer(cpu: CpuWork, question: str, answer: str, max_claims: int) -> list[Claim]:
    """The answer's claims, ``max_claims`` of them selected (or the answer whole), split where the parser is."""
    return await cpu.run(
        CLAIM_PARSER, functools.partial(_split, question=question, answer=answer, max_claims=max_claims)
    )
