"""Distractors for the paper's Table 7 answers and beyond, from a real graph server and fixture vectors."""

from __future__ import annotations

import random

import pytest
from spacy.language import Language

from scoring.consistency.distractors import Distractor, DistractorDeck, DistractorGenerator, DistractorPool, realise
from scoring.consistency.embedding import WordEmbeddings
from scoring.consistency.knowledge import KnowledgeGraph
from scoring.consistency.queries import PROFILES
from scoring.consistency.selection import Target
from scoring.consistency.substitution import SOURCE_TIER, Candidate, SubstituteSources

from .fixtures import ENTITIES

PERSONS = {label for label, _, kind, _ in ENTITIES if kind in ("king", "pharaoh", "ruler", "writer")}
PLACES = {label for label, _, kind, _ in ENTITIES if kind in ("us_state", "province", "city", "capital")}
STATES = {label for label, _, kind, _ in ENTITIES if kind == "us_state"}

SOLOMON = (
    "Who built the first temple for god in jerusalem?",
    "King Solomon built the first temple for god in jerusalem",
)
RICHIE = ("When did all night long come out lionel richie?", "All night long came out in 1983")
FLORIDA = (
    "which state was returned to spain after the revolutionary war?",
    "Florida was returned to spain after the revolutionary war",
)


@pytest.fixture
def generator(nlp: Language, local_endpoint: str, embeddings: WordEmbeddings) -> DistractorGenerator:
    graph = KnowledgeGraph(local_endpoint, PROFILES["local"], timeout=5)
    return DistractorGenerator(nlp, SubstituteSources(graph, embeddings, 2025))


def generate(generator: DistractorGenerator, case: tuple[str, str], num: int = 30, seed: int = 0) -> DistractorPool:
    return generator.generate(case[0], case[1], num, random.Random(seed))


def assert_one_substitution(answer: str, distractor: Distractor) -> None:
    """The distractor is the answer with one span replaced by the substitute; the rest is intact."""
    start = answer.find(distractor.replaced)
    assert start >= 0, distractor
    before, after = answer[:start], answer[start + len(distractor.replaced) :]
    assert distractor.text.startswith(before) and distractor.text.endswith(after), distractor
    middle = distractor.text[len(before) : len(distractor.text) - len(after)]
    assert middle.lower() == distractor.substitute.lower() and middle.lower() != distractor.replaced.lower()


def assert_priority_order(pool: DistractorPool) -> None:
    """Lower-priority sources only after every higher-priority distractor."""
    tiers = [SOURCE_TIER[d.source] for d in pool.distractors]
    assert tiers == sorted(tiers)


@pytest.mark.integration
@pytest.mark.parametrize("seed", range(5))
def test_king_solomon_becomes_other_persons(generator: DistractorGenerator, seed: int) -> None:
    pool = generate(generator, SOLOMON, seed=seed)
    graph = [d for d in pool.distractors if d.source == "knowledge_graph"]
    assert pool.level == 1 and len(graph) >= 3
    assert {d.substitute for d in graph} <= PERSONS - {"Solomon"}
    assert {d.replaced for d in graph} == {"King Solomon"}
    assert all(d.text.endswith(" built the first temple for god in jerusalem") for d in pool.distractors)
    assert pool.distractors[:3] == graph[:3]
    for distractor in pool.distractors:
        assert_one_substitution(SOLOMON[1], distractor)
    assert_priority_order(pool)


@pytest.mark.integration
def test_kings_come_before_other_persons(generator: DistractorGenerator) -> None:
    pool = generate(generator, SOLOMON, num=4)
    assert {d.substitute for d in pool.distractors} <= {
        "David",
        "Charlemagne",
        "Louis XIV",
        "Henry VIII",
        "Alexander the Great",
        "Gopala III",
        "Paris",
    }


@pytest.mark.integration
@pytest.mark.parametrize("seed", range(5))
def test_1983_becomes_other_years(generator: DistractorGenerator, seed: int) -> None:
    pool = generate(generator, RICHIE, seed=seed)
    assert len(pool.distractors) == 30 and {d.source for d in pool.distractors} == {"numeric"}
    years = [int(d.text.rsplit(" ", 1)[1]) for d in pool.distractors]
    assert len(set(years)) == 30 and 1983 not in years and all(abs(y - 1983) <= 15 for y in years)
    for distractor in pool.distractors:
        assert_one_substitution(RICHIE[1], distractor)


@pytest.mark.integration
@pytest.mark.parametrize("seed", range(5))
def test_florida_becomes_other_states_then_places(generator: DistractorGenerator, seed: int) -> None:
    few = generate(generator, FLORIDA, num=5, seed=seed)
    assert {d.substitute for d in few.distractors} == STATES - {"Florida"}
    pool = generate(generator, FLORIDA, seed=seed)
    graph = [d for d in pool.distractors if d.source == "knowledge_graph"]
    assert {d.substitute for d in graph} <= PLACES - {"Florida"} and len(graph) >= 8
    for distractor in pool.distractors:
        assert distractor.text.endswith(" was returned to spain after the revolutionary war")
        assert_one_substitution(FLORIDA[1], distractor)
    assert_priority_order(pool)


@pytest.mark.integration
def test_without_a_graph_entity_the_embedding_source_takes_over(generator: DistractorGenerator) -> None:
    case = (
        "who sings i just want to use your love tonight?",
        "English rock band the Outfield sings i just want to use your love tonight.",
    )
    pool = generate(generator, case)
    assert pool.distractors[0].source == "embedding"
    embedded = {d.substitute for d in pool.distractors if d.source == "embedding"}
    assert embedded == {"Infield", "Bleachers", "Dugout", "Pitchers"}
    for distractor in pool.distractors:
        assert_one_substitution(case[1], distractor)
    assert_priority_order(pool)


@pytest.mark.integration
def test_words_use_embeddings_then_random_words_of_the_same_pos(generator: DistractorGenerator) -> None:
    case = ("who built the temple?", "The priests erected the temple.")
    pool = generate(generator, case, num=5)
    assert pool.level == 2  # "priests": a noun only in the answer; not in the vectors
    assert {d.source for d in pool.distractors} == {"pos_random"}
    assert all(d.replaced == "priests" for d in pool.distractors)


@pytest.mark.integration
def test_a_dead_endpoint_is_recorded_and_skipped(nlp: Language, embeddings: WordEmbeddings) -> None:
    graph = KnowledgeGraph("http://127.0.0.1:9/query", PROFILES["local"], timeout=2)
    pool = DistractorGenerator(nlp, SubstituteSources(graph, embeddings, 2025)).generate(*FLORIDA, 10, random.Random(0))
    assert pool.errors == [pool.errors[0]] and pool.errors[0].startswith("knowledge_graph:")  # asked once
    assert [f.reason for f in pool.failures] == ["knowledge_graph"]  # its exception, for the log and the counter
    assert all(d.source != "knowledge_graph" for d in pool.distractors)


@pytest.mark.unit
def test_nothing_to_substitute_gives_an_empty_pool(nlp: Language, embeddings: WordEmbeddings) -> None:
    pool = DistractorGenerator(nlp, SubstituteSources(None, embeddings, 2025)).generate(
        "Is it?", "Yes.", 30, random.Random(0)
    )
    assert pool.distractors == []


@pytest.mark.integration
def test_distractors_are_unique_and_never_the_answer(generator: DistractorGenerator) -> None:
    for case in (SOLOMON, RICHIE, FLORIDA):
        texts = [d.text.lower() for d in generate(generator, case).distractors]
        assert len(texts) == len(set(texts)) and case[1].lower() not in texts


@pytest.mark.integration
def test_same_seed_same_pool(generator: DistractorGenerator) -> None:
    assert generate(generator, SOLOMON, seed=7).distractors == generate(generator, SOLOMON, seed=7).distractors


@pytest.mark.unit
def test_each_check_draws_fresh_distractors_until_the_pool_runs_out() -> None:
    pool = [Distractor(f"d{i}", "x", f"y{i}", "embedding") for i in range(7)]
    deck = DistractorDeck(pool, random.Random(0))
    first, second = deck.draw(3), deck.draw(3)
    assert first == pool[:3] and second == pool[3:6] and not deck.reused
    third = deck.draw(3)
    assert third[0] == pool[6] and len(set(third)) == 3 and deck.reused


@pytest.mark.unit
def test_a_small_pool_gives_short_checks() -> None:
    deck = DistractorDeck([Distractor("d", "x", "y", "pos_random")], random.Random(0))
    assert len(deck.draw(3)) == 1 and len(deck.draw(3)) == 1 and deck.reused


@pytest.mark.unit
def test_substitutes_take_the_originals_case() -> None:
    target = Target("jerusalem", 3, 12, "entity", "GPE", "NNP", ("jerusalem",), False)
    assert realise("in jerusalem now", Candidate(target, "Athens", "knowledge_graph")) == "in athens now"
    start = Target("Priests", 0, 7, "word", "NNS", "NNS", ("Priests",), False)
    assert realise("Priests built it", Candidate(start, "monks", "embedding")) == "Monks built it"
    inside = Target("Solomon", 4, 11, "entity", "PERSON", "NNP", ("Solomon",), False)
    assert realise("Was Solomon", Candidate(inside, "David", "knowledge_graph")) == "Was David"
