"""The evidence index: BM25 over passages, built once, saved to disk, searched per request.

Scoring uses bm25s because it precomputes every term's BM25 weight into a
sparse matrix, so a query sums a few posting lists instead of visiting every
passage as rank-bm25 does (``bench/retrieval.py`` measures both). It is set up
to give rank-bm25's ``BM25Okapi`` scores: the ATIRE term-frequency part is
Okapi's ``tf·(k1+1) / (tf + k1·(1-b+b·dl/avgdl))`` and Robertson's idf is
Okapi's ``log((N-df+0.5)/(df+0.5))``. The two differ only for terms found in
more than half of all passages, which rank-bm25 floors at a quarter of the
mean idf and bm25s at zero; ``tests/scoring/factcheck/test_index.py`` checks
the scores are equal on a sample of the packaged corpus.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import bm25s
import numpy as np

from .evidence import Evidence
from .passages import Passage, PassageStore, PassageWriter
from .text import tokenize

__all__ = ["K1", "B", "Evidence", "EvidenceIndex", "bm25_model", "write_index"]

# k1 is rank-bm25's default. b is lowered from its 0.75 because the corpus mixes
# ~100-word Wikipedia passages with ~15-word WordNet glosses: at 0.75 the
# glosses' length bonus leaves Wikipedia 2.8 of the 10 evidence slots and finds
# the right article for 22 of the 30 known facts of ``bench/retrieval.py``; at
# 0.3, 4.8 slots and 28 facts (as many as Wikipedia alone), and the answer is
# in the evidence for all 30.
K1, B = 1.5, 0.3
BM25_DIR = "bm25"


def bm25_model() -> bm25s.BM25:
    """A bm25s model whose scores equal rank-bm25's ``BM25Okapi(k1=K1, b=B)`` (see the module doc)."""
    return bm25s.BM25(k1=K1, b=B, method="atire", idf_method="robertson")


def passage_tokens(passage: Passage) -> list[str]:
    """The title is indexed with the text: a passage from the middle of an article rarely repeats it."""
    return tokenize(f"{passage.title} {passage.text}")


def write_index(passages: Iterable[Passage], directory: Path) -> int:
    """Store and index ``passages`` in ``directory`` (which must not exist); returns their count."""
    directory.mkdir(parents=True)
    corpus_tokens: list[list[str]] = []
    with PassageWriter(directory) as writer:
        for passage in passages:
            writer.add(passage)
            corpus_tokens.append(passage_tokens(passage))
    if not corpus_tokens:
        raise ValueError("no passages to index")
    model = bm25_model()
    model.index(corpus_tokens, create_empty_token=False, show_progress=False)
    model.save(str(directory / BM25_DIR), show_progress=False)
    return len(corpus_tokens)


class EvidenceIndex:
    """A loaded index: read-only, shared by every request of the process."""

    def __init__(self, model: bm25s.BM25, store: PassageStore) -> None:
        self._model = model
        self._store = store

    @classmethod
    def load(cls, directory: Path) -> EvidenceIndex:
        """Memory-map the saved index, so loading is quick and idle pages can be shared."""
        model = bm25s.BM25.load(str(directory / BM25_DIR), mmap=True, show_progress=False)
        return cls(model, PassageStore(directory))

    def __len__(self) -> int:
        return len(self._store)

    def scores(self, tokens: list[str]) -> np.ndarray:
        """The BM25 score of every passage for a tokenized query (zeros when no token is known)."""
        vocab = self._model.vocab_dict
        ids = [vocab[token] for token in tokens if token in vocab]
        if not ids:
            return np.zeros(len(self), dtype=np.float32)
        return np.asarray(self._model.get_scores_from_ids(ids))

    def search(self, tokens: list[str], k: int) -> list[Evidence]:
        """The ``k`` best passages that share at least one term with the query, best first."""
        scores = self.scores(tokens)
        rows = np.flatnonzero(scores > 0)
        if len(rows) > k:
            rows = rows[np.argpartition(-scores[rows], k - 1)[:k]]
        rows = rows[np.lexsort((rows, -scores[rows]))]
        return [self._evidence(int(row), float(scores[row])) for row in rows]

    def _evidence(self, row: int, score: float) -> Evidence:
        passage = self._store[row]
        return Evidence(passage.id, passage.title, passage.text, score)
