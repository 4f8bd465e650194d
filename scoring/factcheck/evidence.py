"""A retrieved passage: what the fact-check and RAG judges read, without the index that found it.

Its own module so that the judges (and the gateway's RAG request handling,
which imports them) do not load bm25s and the index with it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Evidence"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """A retrieved passage and its BM25 score for the query."""

    id: str
    title: str
    text: str
    score: float
