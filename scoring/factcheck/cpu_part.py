"""Trust_FC's CPU work, registered with the CPU pool (``scoring.cpu_pool``), which knows nothing of it.

The part is the evidence index (BM25), loaded once per process by
``evidence_loader``, absent when none was built; the work is retrieving the
best passages for a query. Only the query and the ``Evidence`` found cross
to a worker process.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from ..cpu_pool import CpuWork, Part, PartLoader

if TYPE_CHECKING:  # bm25s loads only where the index is loaded
    from ..settings import ScoringSettings
    from .evidence import Evidence
    from .index import EvidenceIndex

__all__ = ["EVIDENCE", "evidence_loader", "retrieve_evidence"]

EVIDENCE: Part[EvidenceIndex] = Part("evidence")


def _load(settings: ScoringSettings) -> EvidenceIndex | None:
    from .assets import load_evidence_index

    return load_evidence_index(settings)


def evidence_loader(settings: ScoringSettings) -> PartLoader:
    """Loads the built index; it gives None (the part is then absent) when none was built."""
    return functools.partial(_load, settings)


def _search(index: EvidenceIndex, query: str, k: int) -> list[Evidence]:
    from .text import tokenize

    return index.search(tokenize(query), k)


async def retrieve_evidence(cpu: CpuWork, query: str, k: int) -> list[Evidence]:
    """The ``k`` best passages for ``query`` (tokenized where the index is)."""
    return await cpu.run(EVIDENCE, functools.partial(_search, query=query, k=k))
