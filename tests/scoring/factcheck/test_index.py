from itertools import islice
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from scoring.factcheck.index import K1, B, EvidenceIndex, passage_tokens, write_index
from scoring.factcheck.passages import Passage
from scoring.factcheck.sources import wikipedia_passages, wikipedia_summaries_path
from scoring.factcheck.text import QUERY_PART_CHARS, evidence_query, tokenize

pytestmark = pytest.mark.unit

PASSAGES = [
    Passage("t:paris", "Paris", "Paris is the capital of France."),
    Passage("t:lyon", "Lyon", "Lyon is a city in France."),
    Passage("t:rome", "Rome", "Rome is the capital of Italy."),
    Passage("t:nile", "Nile", "The Nile flows through Egypt."),
    Passage("t:moon", "Moon", "The Moon orbits Earth."),
    Passage("t:alps", "Alps", "The Alps are mountains in Europe."),
]


def test_an_index_round_trips_through_disk(tmp_path: Path) -> None:
    assert write_index(iter(PASSAGES), tmp_path / "index") == 6
    index = EvidenceIndex.load(tmp_path / "index")
    hits = index.search(tokenize("capital of France"), k=10)
    assert len(index) == 6
    assert [hit.id for hit in hits] == ["t:paris", "t:lyon", "t:rome"]
    assert (hits[0].title, hits[0].text) == ("Paris", "Paris is the capital of France.")
    assert hits[0].score > hits[1].score == hits[2].score > 0  # a tie keeps corpus order


def test_search_returns_at_most_k_passages_that_share_a_word(tmp_path: Path) -> None:
    write_index(iter(PASSAGES), tmp_path / "index")
    index = EvidenceIndex.load(tmp_path / "index")
    assert [hit.id for hit in index.search(tokenize("capital France"), k=1)] == ["t:paris"]
    assert [hit.id for hit in index.search(tokenize("Italy"), k=10)] == ["t:rome"]
    assert index.search(tokenize("unknownword"), k=10) == []
    assert index.search([], k=10) == []


def test_an_empty_corpus_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no passages"):
        write_index(iter([]), tmp_path / "index")


def test_scores_equal_rank_bm25_okapi_on_the_packaged_corpus(tmp_path: Path) -> None:
    """bm25s as configured is a drop-in for rank-bm25: the same score for every passage."""
    path = wikipedia_summaries_path()
    assert path is not None, "the packaged Wikipedia summaries are installed by `make install`"
    sample = list(islice(wikipedia_passages(path, 100), 2000))
    write_index(iter(sample), tmp_path / "index")
    index = EvidenceIndex.load(tmp_path / "index")
    reference = BM25Okapi([passage_tokens(p) for p in sample], k1=K1, b=B)
    queries = [tokenize(evidence_query(f"Who or what is {p.title}?", p.text[:80])) for p in sample[::100]]
    for query in queries:
        assert all(reference.idf.get(t, 1.0) > 0 for t in query), "rank-bm25 floors negative idfs; bm25s zeroes them"
        expected = reference.get_scores(query)
        np.testing.assert_allclose(index.scores(query), expected, rtol=1e-5, atol=1e-5)
        assert expected.max() > 0


def test_the_query_of_a_huge_answer_is_capped(tmp_path: Path) -> None:
    """A 50 MB upstream answer once made a 52 MB trust record: the query kept it whole."""
    answer = "Paris is the capital of France. " * 100_000
    query = evidence_query("What is the capital of France?", answer)
    assert len(query) < 2 * QUERY_PART_CHARS + 100 and query.count("…") == 1
    assert query.endswith('correctly answers the question of "What is the capital of France?"')
    write_index(iter(PASSAGES), tmp_path / "index")
    assert EvidenceIndex.load(tmp_path / "index").search(tokenize(query), k=1)[0].id == "t:paris"
