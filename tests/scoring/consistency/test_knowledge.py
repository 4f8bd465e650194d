"""Entity linking and same-type look-ups against real Oxigraph servers, one per graph profile."""

from __future__ import annotations

import random

import pytest

from scoring.consistency.knowledge import (
    GraphType,
    KnowledgeGraph,
    KnowledgeGraphError,
    compatible_with,
    relaxation_levels,
)
from scoring.consistency.queries import PROFILES, sparql_iri, sparql_string

from .fixtures import ENTITIES

KINGS = {label for label, _, kind, _ in ENTITIES if kind == "king"}
STATES = {label for label, _, kind, _ in ENTITIES if kind == "us_state"}


@pytest.fixture
def local(local_endpoint: str) -> KnowledgeGraph:
    return KnowledgeGraph(local_endpoint, PROFILES["local"], timeout=5)


@pytest.fixture
def dbpedia(dbpedia_endpoint: str) -> KnowledgeGraph:
    return KnowledgeGraph(dbpedia_endpoint, PROFILES["dbpedia"], timeout=5)


@pytest.mark.integration
def test_linking_matches_labels_and_aliases_in_any_case(local: KnowledgeGraph) -> None:
    [florida] = local.link(["sunshine STATE"])
    assert florida.label == "Florida" and florida.form == "sunshine state"
    assert [t.label for t in florida.types][-1] == "American state"  # deepest last
    [solomon] = local.link(["King Solomon", "Solomon"])
    assert solomon.label == "Solomon"
    assert local.link(["Atlantis"]) == []


@pytest.mark.integration
def test_linking_prefers_the_entity_that_fits_spacys_label(local: KnowledgeGraph) -> None:
    both = local.link(["Paris"])
    assert [e.popularity for e in both] == [110.0, 3.0]  # most popular first
    assert compatible_with(both, "PERSON")[0].label == "Paris" and "king" in {
        t.label for t in compatible_with(both, "PERSON")[0].types
    }
    assert compatible_with(both, "GPE") == [both[0]]
    assert compatible_with(both, "LANGUAGE") == both  # nothing fits: keep them all


@pytest.mark.integration
def test_same_type_entities_share_every_type_first(local: KnowledgeGraph) -> None:
    [solomon] = local.link(["Solomon"])
    for seed in range(20):
        found = local.same_type(solomon, 3, random.Random(seed))
        assert len(found) == 3 and {c.label for c in found} <= KINGS - {"Solomon"}
        assert all(c.relaxed == 0 for c in found)


@pytest.mark.integration
def test_sampling_stays_among_the_popular(local: KnowledgeGraph) -> None:
    [solomon] = local.link(["Solomon"])
    seen = set()
    for seed in range(30):
        seen |= {c.label for c in local.same_type(solomon, 2, random.Random(seed))}
    assert seen == {"Alexander the Great", "David", "Henry VIII", "Charlemagne"}  # the top 2 x 2


@pytest.mark.integration
def test_types_relax_from_the_most_specific_when_short(local: KnowledgeGraph) -> None:
    [solomon] = local.link(["Solomon"])
    found = local.same_type(solomon, 12, random.Random(0))
    by_relaxation = {}
    for candidate in found:
        by_relaxation.setdefault(candidate.relaxed, set()).add(candidate.label)
    assert by_relaxation[0] == KINGS - {"Solomon"}
    assert by_relaxation[1] == {"Ramses II"}  # sovereign
    assert by_relaxation[2] == {"Mohammad Hatta"}  # ruler
    assert by_relaxation[3] == {"William Shakespeare", "Ben Jonson"}  # person
    assert [c.relaxed for c in found] == sorted(c.relaxed for c in found)
    assert "Florida" not in {c.label for c in found}


@pytest.mark.unit
def test_relaxation_levels_ask_for_leaf_types_only() -> None:
    types = [
        GraphType("u:obj", "object", 2),
        GraphType("u:person", "person", 6, frozenset({"u:obj"})),
        GraphType("u:ruler", "ruler", 7, frozenset({"u:person"})),
        GraphType("u:poet", "poet", 7, frozenset({"u:person"})),
        GraphType("u:king", "king", 12, frozenset({"u:ruler"})),
    ]
    assert relaxation_levels(types, 4) == [("u:king", "u:poet"), ("u:poet", "u:ruler"), ("u:person",)]


@pytest.mark.integration
def test_dbpedia_profile_follows_redirects_and_relaxes_ontology_types(dbpedia: KnowledgeGraph) -> None:
    [kobe] = compatible_with(dbpedia.link(["Kobe Bean Bryant"]), "PERSON")
    assert kobe.iri == "http://dbpedia.org/resource/Kobe_Bryant" and kobe.label == "Kobe Bryant"
    assert [t.label for t in kobe.types] == ["agent", "person", "athlete", "basketball player"]
    assert {c.label for c in dbpedia.same_type(kobe, 2, random.Random(0))} == {"Michael Jordan", "LeBron James"}
    wider = dbpedia.same_type(kobe, 4, random.Random(0))
    assert [(c.label, c.relaxed) for c in wider][2:] == [("Lionel Messi", 1), ("Ada Lovelace", 2)]


@pytest.mark.integration
def test_dbpedia_profile_links_exact_english_labels(dbpedia: KnowledgeGraph) -> None:
    assert [e.label for e in dbpedia.link(["Kobe"])] == ["Kobe"]
    assert dbpedia.link(["kobe bryant"]) == []  # DBpedia labels are case-sensitive


@pytest.mark.integration
def test_an_unreachable_endpoint_raises_a_knowledge_graph_error() -> None:
    graph = KnowledgeGraph("http://127.0.0.1:9/query", PROFILES["local"], timeout=2)
    with pytest.raises(KnowledgeGraphError):
        graph.link(["Florida"])


@pytest.mark.unit
def test_query_literals_and_iris_are_escaped() -> None:
    assert sparql_string('say "hi"\n', "en") == '"say \\"hi\\"\\n"@en'
    with pytest.raises(ValueError):
        sparql_iri("urn:x> } DROP ALL {")
