"""Asset building: idempotent steps, vector training, and the real build's assets end to end."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path

import pytest
from spacy.language import Language

from scoring.consistency.assets import build_consistency_assets
from scoring.consistency.knowledge import KnowledgeGraph, compatible_with
from scoring.consistency.paths import asset_paths
from scoring.consistency.queries import PROFILES
from scoring.consistency.runtime import load_embeddings, load_generator, local_sparql_endpoint
from scoring.consistency.scorer import ConsistencyScorer
from scoring.consistency.vectors_build import (
    TaggedCorpus,
    VectorOptions,
    read_sentences,
    tag_corpus,
    train_vectors,
    write_sentences,
    write_vocabulary,
)
from scoring.cpu_pool import CpuParts, InThreads
from scoring.settings import ConsistencySettings, ScoringSettings
from scoring.types import ScoringJob
from tests.assets import DATA_DIR, assets_built
from tests.fake_upstream import FakeUpstream

from .upstream_ask import Answerer, upstream_ask


@pytest.mark.unit
def test_present_assets_are_not_rebuilt(tmp_path: Path) -> None:
    paths = asset_paths(ScoringSettings(data_dir=tmp_path))
    (paths.store).mkdir(parents=True)
    for path in (paths.graph, paths.store / "CURRENT", paths.corpus, paths.vocabulary, paths.vectors):
        path.write_text("kept")
    build_consistency_assets(ScoringSettings(data_dir=tmp_path))
    assert paths.graph.read_text() == paths.vectors.read_text() == "kept" and not paths.manifest.exists()


@pytest.mark.unit
def test_missing_assets_name_the_command_that_builds_them(tmp_path: Path) -> None:
    settings = ScoringSettings(data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"scoring.consistency.assets") as raised:
        load_embeddings(settings.consistency, asset_paths(settings))
    assert raised.value.filename == str(asset_paths(settings).vectors)


@pytest.mark.integration
def test_tagging_and_training_on_a_small_corpus(nlp: Language, tmp_path: Path) -> None:
    corpus = tag_corpus(nlp, ["Florida is a state.", "Texas is a state too.", "Florida borders Georgia."])
    assert corpus.sentences[0] == ["Florida", "is", "a", "state"]  # punctuation dropped
    assert corpus.tags["Florida"] == Counter(NNP=2) and corpus.count("state") == 2
    write_sentences(tmp_path / "c.tok", corpus.sentences)
    assert read_sentences(tmp_path / "c.tok") == corpus.sentences
    vectors = train_vectors(corpus.sentences, VectorOptions(vector_size=8, min_count=1, epochs=2, workers=1))
    assert {"Florida", "state", "Georgia"} <= set(vectors.index_to_key)


@pytest.mark.unit
def test_vocabulary_keeps_only_frequent_words(tmp_path: Path) -> None:
    corpus = TaggedCorpus([], {"state": Counter(NN=3), "rare": Counter(NN=1)})
    write_vocabulary(tmp_path / "v.tsv", corpus, min_count=2)
    assert (tmp_path / "v.tsv").read_text() == "state\tNN\t3\n"


PERSON_ANSWER = (
    "Who built the first temple for god in jerusalem?",
    "King Solomon built the first temple for god in jerusalem",
)
YEAR_ANSWER = ("When did all night long come out lionel richie?", "All night long came out in 1983")
PLACE_ANSWER = (
    "which state was returned to spain after the revolutionary war?",
    "Florida was returned to spain after the revolutionary war",
)


@pytest.mark.integration
@pytest.mark.skipif(not assets_built(), reason="scoring assets not built: `make install` builds them")
def test_built_assets_end_to_end(fake_upstream: FakeUpstream) -> None:
    """The real build's graph and vectors, then Table 7's answers scored on them.

    The assets are those ``make assets`` built from the packaged data (``make test`` installs first, so a fresh
    checkout builds them from scratch); building a second copy here took minutes of the suite on 2 cores.
    """
    settings = ScoringSettings(data_dir=DATA_DIR, consistency=ConsistencySettings(seed=3))
    manifest = asset_paths(settings).manifest.read_text()
    build_consistency_assets(settings)  # complete: nothing is rebuilt
    assert asset_paths(settings).manifest.read_text() == manifest

    async def run() -> None:
        async with local_sparql_endpoint(settings) as endpoint, upstream_ask(fake_upstream.url) as ask:
            generator = load_generator(settings, endpoint)
            scorer = ConsistencyScorer(settings.consistency, InThreads(CpuParts(distractors=generator)))
            graph = KnowledgeGraph(endpoint, PROFILES["local"])
            for (question, answer), kind in ((PERSON_ANSWER, "person"), (PLACE_ANSWER, "region")):
                pool = await asyncio.to_thread(generator.generate, question, answer, 30, random.Random(0))
                firsts = pool.distractors[:9]
                assert {d.source for d in firsts} == {"knowledge_graph"}
                for distractor in firsts:
                    linked = compatible_with(graph.link([distractor.substitute]), "")
                    assert any(kind in {t.label for t in e.types} for e in linked), distractor
            fake_upstream.responder = Answerer(YEAR_ANSWER[1], lambda n: "original")
            result = await scorer.score(
                ScoringJob(id="y", model="fake", question=YEAR_ANSWER[0], answer=YEAR_ANSWER[1]), ask
            )
            # every distractor of a year comes from the numeric generator, however many checks the stopping rule asks
            assert result.value == 1.0 and set(result.details.distractor_sources) == {"numeric"}

    asyncio.run(run())
