"""Embedding neighbours and random same-POS words, on hand-made vectors with known cosines."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from scoring.consistency.embedding import WordEmbeddings, near_duplicate, read_vocabulary, tag_fits
from scoring.consistency.vectors_build import TaggedCorpus, write_vocabulary

pytestmark = pytest.mark.unit


def test_neighbours_drop_synonyms_containers_duplicates_and_other_pos(embeddings: WordEmbeddings) -> None:
    found = embeddings.neighbours(["state"], "NN", 10, "state")
    # province: cosine 0.95 (>= 0.9); states, statehood: contain "state"; regions: NNS; governed: VBN
    assert found == ["region", "territory", "county"]


def test_neighbours_are_nearest_first_and_capped(embeddings: WordEmbeddings) -> None:
    assert embeddings.neighbours(["temple"], "NN", 2, "temple") == ["shrine", "church"]


def test_neighbours_never_repeat_a_stem(embeddings: WordEmbeddings) -> None:
    found = embeddings.neighbours(["Outfield"], "NNP", 10, "the Outfield")
    assert found == ["Infield", "Bleachers", "Dugout", "Pitchers"]  # names for a name (NNP, NNPS)


def test_verb_neighbours_keep_the_inflection(embeddings: WordEmbeddings) -> None:
    assert embeddings.neighbours(["built"], "VBD", 10, "built") == ["founded", "erected", "restored"]


def test_unknown_words_have_no_neighbours(embeddings: WordEmbeddings) -> None:
    assert embeddings.neighbours(["mcchicken"], "NN", 5, "mcchicken") == []
    assert embeddings.has("Temple") and not embeddings.has("mcchicken")


def test_random_words_share_the_tag_and_are_seeded(embeddings: WordEmbeddings) -> None:
    vocabulary = embeddings.vocabulary
    first = vocabulary.random_words("VBD", 3, random.Random(4), "built")
    assert first == vocabulary.random_words("VBD", 3, random.Random(4), "built")
    assert "built" not in first and all(
        tag_fits(vocabulary.tags[w], "VBD") or w in vocabulary.by_coarse["VERB"] for w in first
    )
    nouns = vocabulary.random_words("NN", 50, random.Random(0), "state")
    assert nouns and all(not near_duplicate(n, "state") for n in nouns)


def test_near_duplicates() -> None:
    assert near_duplicate("Florida", "florida") and near_duplicate("temple", "temples")
    assert near_duplicate("Floridia", "Florida") and near_duplicate("King Solomon", "Solomon")
    assert not near_duplicate("Texas", "Florida") and not near_duplicate("1983", "1999")


def test_tags_fit_by_inflection_and_names_by_class() -> None:
    assert tag_fits(("VBN", "VBD"), "VBD") and not tag_fits(("VBG",), "VBD")
    assert tag_fits(("NNPS",), "NNP") and not tag_fits(("NN",), "NNP")


def test_vocabulary_round_trip(tmp_path: Path) -> None:
    from collections import Counter

    corpus = TaggedCorpus(
        [["built", "it"]],
        {"built": Counter({"VBD": 6, "VBN": 3, "JJ": 1}), "it": Counter(PRP=1), "rare": Counter(NN=1)},
    )
    write_vocabulary(tmp_path / "v.tsv", corpus, min_count=2, tag_share=0.2)
    vocabulary = read_vocabulary(tmp_path / "v.tsv")
    assert vocabulary.tags == {"built": ("VBD", "VBN")} and vocabulary.counts == {"built": 10}
