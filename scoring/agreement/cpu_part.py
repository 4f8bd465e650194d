"""The evidence agreement check's CPU work, registered with the CPU pool (``scoring.cpu_pool``).

The part is an ``AgreementReader``: the evidence index Trust_FC builds (the
packaged corpora and the users' own, ``trustgate corpus add``) and the
WordNet lexicon, loaded once per process by ``agreement_loader``; absent when
no index was built. The work is one check: retrieve for the question, then
for the question and the answer's entity, and read both against the claim, in
one trip to the worker. Only the question, the claim and the
``AgreementFound`` cross to a worker process.

Where Trust_FC runs too, each worker holds the index twice (its vocabulary,
some tens of MB; the BM25 arrays are memory-mapped and shared), for one trip
per check instead of one per retrieval.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..cpu_pool import CpuWork, Part, PartLoader
from .decide import Agreement, check_agreement, claim_entity
from .words import Lexicon

if TYPE_CHECKING:  # bm25s loads only where the index is loaded
    from ..factcheck.evidence import Evidence
    from ..factcheck.index import EvidenceIndex
    from ..settings import ScoringSettings

__all__ = ["AGREEMENT", "AgreementFound", "AgreementQuery", "AgreementReader", "agreement_loader", "find_agreement"]


@dataclass(frozen=True)
class AgreementReader:
    """What one process reads evidence with: the index and the lexicon."""

    index: EvidenceIndex
    lexicon: Lexicon


@dataclass(frozen=True)
class AgreementFound:
    """A check's verdict, the passages it read and the queries that found them: picklable, back from a worker."""

    agreement: Agreement
    evidence: tuple[Evidence, ...]
    queries: tuple[str, ...]


AGREEMENT: Part[AgreementReader] = Part("agreement")


def _load(settings: ScoringSettings) -> AgreementReader | None:
    from ..factcheck.assets import load_evidence_index
    from .words import read_lexicon

    index = load_evidence_index(settings)
    return None if index is None else AgreementReader(index, read_lexicon(settings.factcheck.wordnet_dir))


def agreement_loader(settings: ScoringSettings) -> PartLoader:
    """Loads the index and the lexicon; None (the part is then absent) when no index was built."""
    return functools.partial(_load, settings)


def _search(reader: AgreementReader, query: str, k: int) -> list[Evidence]:
    from ..factcheck.text import tokenize

    return reader.index.search(tokenize(query), k) if k else []


@dataclass(frozen=True)
class AgreementQuery:
    """One check's inputs: the question, the claim, its entity where the caller knows it, and whether the claim
    must state the asked relation to be read (a long answer's claims past its first, ``decide``)."""

    question: str
    claim: str
    entity: str | None = None
    relation_required: bool = False


def _find(reader: AgreementReader, query: AgreementQuery, top_k: int, entity_top_k: int) -> AgreementFound:
    question, claim, entity = query.question, query.claim, query.entity
    found = claim_entity(question, claim, reader.lexicon, entity, relation_required=query.relation_required)
    if found is None and query.relation_required:  # nothing to compare: no passage is worth reading
        agreement = check_agreement(question, claim, [], reader.lexicon, entity, relation_required=True)
        return AgreementFound(agreement, (), ())
    queries = [question]
    evidence = _search(reader, question, top_k)
    if found is not None and entity_top_k:
        queries.append(f"{question} {found.text}")
        seen = {passage.id for passage in evidence}
        evidence += [p for p in _search(reader, queries[-1], entity_top_k) if p.id not in seen]
    agreement = check_agreement(
        question, claim, evidence, reader.lexicon, entity, relation_required=query.relation_required
    )
    return AgreementFound(agreement, tuple(evidence), tuple(queries))


async def find_agreement(cpu: CpuWork, query: AgreementQuery, top_k: int, entity_top_k: int) -> AgreementFound:
    """The check of ``query.claim`` (answering ``query.question``; its entity given or read from it) against the
    evidence retrieved for the question (``top_k`` passages) and for the question with the entity
    (``entity_top_k``)."""
    return await cpu.run(AGREEMENT, functools.partial(_find, query=query, top_k=top_k, entity_top_k=entity_top_k))
