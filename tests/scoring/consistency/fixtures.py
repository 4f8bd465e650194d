"""Small, hand-made knowledge graph and word vectors for the consistency tests.

Big enough to exercise linking, type relaxation, popularity and every filter;
small enough to build in milliseconds. Types mirror WordNet's shape (a person
is a living thing; a king is a sovereign, a ruler and a person), with the
entities' types closed under superclass as ``graph_build`` writes them.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from gensim.models import KeyedVectors

from scoring.consistency.embedding import Vocabulary
from scoring.consistency.graph_build import EntityRecord, TypeRecord, write_ntriples
from scoring.consistency.queries import TG

# name: (label, depth, parents)
TYPES: dict[str, tuple[str, int, tuple[str, ...]]] = {
    "object": ("object", 2, ()),
    "living": ("living thing", 4, ("object",)),
    "person": ("person", 6, ("living",)),
    "ruler": ("ruler", 7, ("person",)),
    "sovereign": ("sovereign", 11, ("ruler",)),
    "king": ("king", 12, ("sovereign",)),
    "pharaoh": ("pharaoh", 12, ("sovereign",)),
    "writer": ("writer", 8, ("person",)),
    "region": ("region", 4, ("object",)),
    "district": ("administrative district", 6, ("region",)),
    "state": ("state", 7, ("district",)),
    "us_state": ("American state", 8, ("state",)),
    "province": ("Canadian province", 8, ("state",)),
    "city": ("city", 8, ("district",)),
    "capital": ("national capital", 9, ("city",)),
}

# label, aliases, most specific type, popularity
ENTITIES: list[tuple[str, tuple[str, ...], str, int]] = [
    ("Solomon", (), "king", 27),
    ("David", ("King David",), "king", 40),
    ("Charlemagne", (), "king", 30),
    ("Louis XIV", ("Sun King",), "king", 25),
    ("Henry VIII", (), "king", 35),
    ("Alexander the Great", (), "king", 50),
    ("Gopala III", (), "king", 1),
    ("Ramses II", (), "pharaoh", 20),
    ("Mohammad Hatta", (), "ruler", 5),
    ("William Shakespeare", ("Shakespeare",), "writer", 60),
    ("Ben Jonson", ("Jonson",), "writer", 10),
    ("Florida", ("Sunshine State", "FL"), "us_state", 137),
    ("Louisiana", (), "us_state", 80),
    ("Illinois", (), "us_state", 70),
    ("Texas", (), "us_state", 120),
    ("Georgia", (), "us_state", 90),
    ("California", (), "us_state", 150),
    ("Ontario", (), "province", 40),
    ("Paris", ("City of Light",), "capital", 110),
    ("Rome", (), "capital", 100),
    ("Madrid", (), "capital", 60),
    ("Lyon", (), "city", 20),
    ("Paris", (), "king", 3),  # a second "Paris" (the prince of Troy, promoted): linking must choose
]


def type_iri(name: str) -> str:
    return f"{TG}test-type-{name}"


def entity_iri(label: str, kind: str) -> str:
    return f"{TG}test-{kind}-{label.replace(' ', '_')}"


def _closure(name: str) -> set[str]:
    return {name}.union(*(_closure(p) for p in TYPES[name][2]))


def write_test_graph(path: Path) -> None:
    types = [
        TypeRecord(type_iri(n), label, depth, tuple(type_iri(p) for p in parents))
        for n, (label, depth, parents) in TYPES.items()
    ]
    entities = [
        EntityRecord(entity_iri(label, kind), label, aliases, {type_iri(t) for t in _closure(kind)})
        for label, aliases, kind, _ in ENTITIES
    ]
    popularity = {entity_iri(label, kind): pop for label, _, kind, pop in ENTITIES}
    write_ntriples(path, entities, types, popularity)


DBPEDIA_GRAPH = """\
@prefix dbo: <http://dbpedia.org/ontology/> .
@prefix dbr: <http://dbpedia.org/resource/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
dbo:Agent rdfs:label "agent"@en ; rdfs:subClassOf owl:Thing .
dbo:Person rdfs:label "person"@en ; rdfs:subClassOf dbo:Agent .
dbo:Athlete rdfs:label "athlete"@en ; rdfs:subClassOf dbo:Person .
dbo:BasketballPlayer rdfs:label "basketball player"@en ; rdfs:subClassOf dbo:Athlete .
dbo:SoccerPlayer rdfs:label "soccer player"@en ; rdfs:subClassOf dbo:Athlete .
dbo:Place rdfs:label "place"@en ; rdfs:subClassOf owl:Thing .
dbr:Kobe_Bryant a owl:Thing, dbo:Agent, dbo:Person, dbo:Athlete, dbo:BasketballPlayer ;
    rdfs:label "Kobe Bryant"@en, "Kobe Bryant"@de ; dbo:wikiPageLength 90000 .
dbr:Kobe a owl:Thing, dbo:Place ; rdfs:label "Kobe"@en ; dbo:wikiPageLength 50000 .
dbr:Kobe_Bean_Bryant rdfs:label "Kobe Bean Bryant"@en ; dbo:wikiPageRedirects dbr:Kobe_Bryant .
dbr:Michael_Jordan a dbo:Agent, dbo:Person, dbo:Athlete, dbo:BasketballPlayer ;
    rdfs:label "Michael Jordan"@en ; dbo:wikiPageLength 120000 .
dbr:LeBron_James a dbo:Agent, dbo:Person, dbo:Athlete, dbo:BasketballPlayer ;
    rdfs:label "LeBron James"@en ; dbo:wikiPageLength 110000 .
dbr:Lionel_Messi a dbo:Agent, dbo:Person, dbo:Athlete, dbo:SoccerPlayer ;
    rdfs:label "Lionel Messi"@en ; dbo:wikiPageLength 100000 .
dbr:Ada_Lovelace a dbo:Agent, dbo:Person ; rdfs:label "Ada Lovelace"@en ; dbo:wikiPageLength 40000 .
"""


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def _around(base: np.ndarray, cosine: float, axis: int, dim: int) -> np.ndarray:
    """A unit vector at exactly ``cosine`` from unit ``base``, turned towards basis ``axis``."""
    other = np.zeros(dim, dtype=np.float32)
    other[axis] = 1.0
    other = _unit(other - other.dot(base) * base)
    return (cosine * base + math.sqrt(1 - cosine**2) * other).astype(np.float32)


DIM = 16
# word -> (centre word or None, cosine to it, a free axis, Penn tags, corpus count)
WORDS: dict[str, tuple[str | None, float, int, tuple[str, ...], int]] = {
    "state": (None, 1.0, 0, ("NN",), 400),
    "states": ("state", 0.80, 1, ("NNS",), 300),
    "province": ("state", 0.95, 2, ("NN",), 100),
    "region": ("state", 0.85, 3, ("NN",), 200),
    "territory": ("state", 0.82, 4, ("NN",), 150),
    "regions": ("state", 0.81, 5, ("NNS",), 90),
    "governed": ("state", 0.80, 6, ("VBN",), 60),
    "statehood": ("state", 0.79, 7, ("NN",), 30),
    "county": ("state", 0.78, 8, ("NN",), 120),
    "temple": (None, 1.0, 9, ("NN",), 80),
    "shrine": ("temple", 0.84, 10, ("NN",), 40),
    "church": ("temple", 0.83, 11, ("NN",), 300),
    "mosque": ("temple", 0.82, 12, ("NN",), 60),
    "palace": ("temple", 0.80, 13, ("NN",), 90),
    "Outfield": (None, 1.0, 14, ("NNP",), 6),
    "Infield": ("Outfield", 0.85, 15, ("NNP",), 5),
    "Bleachers": ("Outfield", 0.84, 1, ("NNPS", "NNP"), 7),
    "Dugout": ("Outfield", 0.83, 2, ("NNP",), 8),
    "Pitchers": ("Outfield", 0.82, 3, ("NNP",), 9),
    "band": (None, 1.0, 5, ("NN",), 500),
    "built": (None, 1.0, 6, ("VBD", "VBN"), 120),
    "founded": ("built", 0.85, 7, ("VBN", "VBD"), 160),
    "constructed": ("built", 0.84, 8, ("VBN",), 50),
    "building": ("built", 0.83, 9, ("NN", "VBG"), 200),
    "erected": ("built", 0.82, 10, ("VBD", "VBN"), 30),
    "restored": ("built", 0.81, 11, ("VBD", "VBN"), 40),
}


def make_vectors() -> KeyedVectors:
    vectors: dict[str, np.ndarray] = {}
    for word, (centre, cosine, axis, _, _) in WORDS.items():
        if centre is None:
            base = np.zeros(DIM, dtype=np.float32)
            base[axis] = 1.0
            vectors[word] = base
        else:
            vectors[word] = _around(vectors[centre], cosine, axis, DIM)
    model = KeyedVectors(vector_size=DIM)
    model.add_vectors(list(vectors), np.stack(list(vectors.values())))
    return model


def make_vocabulary() -> Vocabulary:
    return Vocabulary({w: spec[3] for w, spec in WORDS.items()}, {w: spec[4] for w, spec in WORDS.items()})
