import logging
from pathlib import Path

import pytest

from scoring.factcheck.assets import (
    add_corpus,
    build_factcheck_assets,
    index_dir,
    load_evidence_index,
    main,
    remove_corpus,
)
from scoring.factcheck.index import EvidenceIndex
from scoring.factcheck.sources import CorpusError
from scoring.factcheck.text import evidence_query, tokenize
from scoring.settings import FactCheckSettings, ScoringSettings

from .conftest import FACTS, write_jsonl

pytestmark = pytest.mark.unit

# Facts whose answer is in a known summary of the packaged Wikipedia corpus.
PACKAGED_FACTS = [
    ("What is the capital of France?", "Paris is the capital of France.", "wikipedia:Paris"),
    ("Who directed 2001: A Space Odyssey?", "Stanley Kubrick directed it.", "wikipedia:2001: A Space Odyssey"),
    (
        "Who shared the 1903 Nobel Prize in Physics with Pierre Curie?",
        "Marie Curie shared it.",
        "wikipedia:Marie Curie",
    ),
    (
        "What is the highest mountain on Earth?",
        "Mount Everest is the highest mountain on Earth.",
        "wikipedia:Mount Everest",
    ),
    (
        "Who painted A Sunday Afternoon on the Island of La Grande Jatte?",
        "Georges Seurat painted it.",
        "wikipedia:A Sunday Afternoon on the Island of La Grande Jatte",
    ),
]


def top_ids(index: EvidenceIndex, question: str, answer: str) -> list[str]:
    return [hit.id for hit in index.search(tokenize(evidence_query(question, answer)), k=10)]


def test_an_added_corpus_is_indexed_and_found(facts_index: EvidenceIndex) -> None:
    assert len(facts_index) == len(FACTS)
    assert top_ids(facts_index, "What is the capital of France?", "Paris.")[0] == "facts:paris"


def test_building_again_with_the_same_inputs_does_nothing(
    settings: ScoringSettings, facts_index: EvidenceIndex
) -> None:
    manifest = index_dir(settings) / "manifest.json"
    before = manifest.stat().st_mtime_ns
    build_factcheck_assets(settings)
    assert manifest.stat().st_mtime_ns == before


def test_adding_under_the_same_name_replaces_and_removing_rebuilds(settings: ScoringSettings, tmp_path: Path) -> None:
    add_corpus(settings, write_jsonl(tmp_path / "a.jsonl", FACTS), name="mine")
    added = add_corpus(settings, write_jsonl(tmp_path / "b.jsonl", FACTS[:2]), name="mine")
    assert (added.name, added.passages, added.index_passages) == ("mine", 2, 2)
    add_corpus(settings, write_jsonl(tmp_path / "other.jsonl", FACTS[2:3]))
    assert remove_corpus(settings, "mine") is True
    index = load_evidence_index(settings)
    assert index is not None and len(index) == 1
    assert remove_corpus(settings, "mine") is False


def test_without_any_corpus_there_is_no_index(settings: ScoringSettings) -> None:
    build_factcheck_assets(settings)
    assert load_evidence_index(settings) is None


def test_an_empty_or_broken_corpus_is_refused_and_leaves_nothing_behind(
    settings: ScoringSettings, tmp_path: Path
) -> None:
    with pytest.raises(CorpusError, match="no text"):
        add_corpus(settings, write_jsonl(tmp_path / "empty.jsonl", [{"text": "  "}]))
    (tmp_path / "broken.jsonl").write_text('{"text": "ok"}\n{broken\n')
    with pytest.raises(CorpusError, match=r"broken.jsonl:2"):
        add_corpus(settings, tmp_path / "broken.jsonl")
    assert list((Path(settings.data_dir) / "factcheck" / "corpora").iterdir()) == []
    assert load_evidence_index(settings) is None


def test_a_stale_index_still_loads_with_a_warning(
    settings: ScoringSettings, facts_index: EvidenceIndex, caplog: pytest.LogCaptureFixture
) -> None:
    changed = settings.model_copy(update={"factcheck": FactCheckSettings(default_corpora=[], passage_words=50)})
    with caplog.at_level(logging.WARNING, logger="scoring.factcheck.assets"):
        assert load_evidence_index(changed) is not None
    assert "built with other settings" in caplog.text


@pytest.fixture(scope="module")
def wikipedia_index(tmp_path_factory: pytest.TempPathFactory) -> EvidenceIndex:
    settings = ScoringSettings(
        data_dir=tmp_path_factory.mktemp("data"), factcheck=FactCheckSettings(default_corpora=["wikipedia"])
    )
    build_factcheck_assets(settings)
    index = load_evidence_index(settings)
    assert index is not None
    return index


@pytest.mark.parametrize(("question", "answer", "passage_id"), PACKAGED_FACTS)
def test_known_facts_retrieve_their_summary(
    wikipedia_index: EvidenceIndex, question: str, answer: str, passage_id: str
) -> None:
    assert passage_id in top_ids(wikipedia_index, question, answer)


def test_the_default_assets_build_and_find_known_facts(tmp_path: Path) -> None:
    """The install-time build, as ``python -m scoring.factcheck.assets`` runs it: Wikipedia and WordNet."""
    main(["--data-dir", str(tmp_path)])
    index = load_evidence_index(ScoringSettings(data_dir=tmp_path))
    assert index is not None and len(index) > 100_000
    for question, answer, passage_id in PACKAGED_FACTS:
        assert passage_id in top_ids(index, question, answer)
    assert "wordnet:n08932568" in top_ids(index, "What is the capital of France?", "Paris.")  # Paris's gloss
