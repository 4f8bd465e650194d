"""Building the local graph from WordNet lines and vital-article descriptions."""

from __future__ import annotations

from pathlib import Path

import pytest

from scoring.consistency.graph_build import (
    build_graph,
    description_head,
    mention_counts,
    preferred_label,
    write_ntriples,
)
from scoring.consistency.packaged import Article, parse_data_line

pytestmark = pytest.mark.unit

# Real lines from WordNet 3.0's data.noun (pointers trimmed), enough for Florida and Solomon.
DATA_NOUN = """\
  1 This software and database is being provided to you, the LICENSEE, by Princeton University
00001740 03 n 01 entity 0 000 | that which is perceived or known or inferred to have its own distinct existence
00001930 03 n 01 physical_entity 0 001 @ 00001740 n 0000 | an entity that has physical existence
00007846 03 n 02 person 0 individual 0 001 @ 00001930 n 0000 | a human being
10231515 18 n 01 king 0 001 @ 00007846 n 0000 | a male sovereign; ruler of a kingdom
11307759 18 n 01 Solomon 0 001 @i 10231515 n 0000 | (Old Testament) son of David and king of Israel
11086279 18 n 03 John 2 King_John 0 John_Lackland 0 001 @i 10231515 n 0000 | King of England from 1199 to 1216
08654360 15 n 01 state 0 001 @ 00001930 n 0000 | the territory occupied by one of the constituent administrative districts
08655464 15 n 01 American_state 0 001 @ 08654360 n 0000 | one of the 50 states of the United States
09071690 15 n 04 Florida 0 Sunshine_State 0 Everglade_State 0 FL 0 001 @i 08655464 n 0000 | a state in southeastern United States
09054915 15 n 02 Louisiana 0 LA 0 001 @i 08655464 n 0000 | a state in the southern United States
"""


def synsets() -> dict:  # type: ignore[type-arg]
    parsed = (parse_data_line(line) for line in DATA_NOUN.splitlines())
    return {s.offset: s for s in parsed if s is not None}


def test_data_lines_parse_into_lemmas_parents_and_instances() -> None:
    florida = synsets()["09071690"]
    assert florida.lemmas == ("Florida", "Sunshine State", "Everglade State", "FL")
    assert florida.instance_of == ("08655464",) and florida.hypernyms == ()
    assert parse_data_line("  1 This software") is None


def test_people_get_their_full_name_as_label() -> None:
    assert preferred_label(["John", "King John", "John Lackland"]) == "King John"
    assert preferred_label(["Florida", "Sunshine State", "FL"]) == "Florida"


def test_description_heads() -> None:
    assert description_head("U.S. state") == ("state", "U.S.")
    assert description_head("City in Tombouctou Region, Mali") == ("city", "")
    assert description_head("English theologian (1328–1384)") == ("theologian", "English")
    assert description_head("1968 film by Stanley Kubrick") == ("film", "")
    assert description_head("") is None


def test_mentions_count_documents_not_occurrences() -> None:
    counts = mention_counts(
        {"florida", "sunshine state", "fl"},
        ["Florida and Florida again.", "The Sunshine State is warm.", "Nothing here.", "florida!"],
    )
    assert counts == {"florida": 2, "sunshine state": 1}


def test_graph_types_instances_and_articles(tmp_path: Path) -> None:
    index = {"state": ["08654360"], "king": ["10231515"], "person": ["00007846"]}
    articles = [
        Article("Florida", "Florida is a state. Solomon never went there.", "U.S. state", "Geography"),
        Article("Psycho (1960 film)", "", "1960 film directed by Alfred Hitchcock", "Arts"),
    ]
    data = build_graph(synsets(), index, articles)
    by_label = {(e.label, e.iri.split(":")[-1][:3]): e for e in data.entities}
    florida_wn, florida_wiki = by_label[("Florida", "wn-")], by_label[("Florida", "wik")]
    type_labels = {t.iri: t.label for t in data.types}
    assert {type_labels[t] for t in florida_wn.types} == {"American state", "state", "physical entity", "entity"}
    assert {type_labels[t] for t in florida_wiki.types} == {"U.S. state", "state", "physical entity", "entity"}
    assert florida_wn.keys == {"florida", "sunshine state", "everglade state", "fl"}
    assert by_label[("Psycho", "wik")].aliases == ("Psycho (1960 film)",)  # "film" is not in this index
    depth = {t.label: t.depth for t in data.types}
    assert depth["entity"] == 0 and depth["American state"] == depth["state"] + 1 == depth["U.S. state"]
    assert data.popularity[florida_wn.iri] == 1  # mentioned in one document: the article
    triples = write_ntriples(tmp_path / "g.nt", data.entities, data.types, data.popularity)
    assert triples == len((tmp_path / "g.nt").read_text().splitlines())
