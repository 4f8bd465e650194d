"""Same-type entities from a knowledge graph over SPARQL: the first source of substitutes.

Following the TrustScore paper (Appendix A.5.1, ``find_dbpedia_ents``): link the
answer's entity to the graph, take all of its types, ask for other entities that
have all of them, and relax the number of required types until there are enough.
Types are ordered from general to specific and the most specific are dropped
first (one depth level at a time), so "king" relaxes to "sovereign", then
"ruler", never straight to "entity". Among the entities found, the popular ones
are preferred and a random sample of them is returned.

Queries come from the graph profile (``queries.py``); requests go through
SPARQLWrapper to the configured endpoint, with its timeout. Results are cached
per query: the graph does not change while the gateway runs.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from SPARQLWrapper import JSON, SPARQLWrapper

from .queries import GraphProfile

__all__ = [
    "GraphCandidate",
    "GraphType",
    "KnowledgeGraph",
    "KnowledgeGraphError",
    "LinkedEntity",
    "compatible_with",
    "parse_links",
    "relaxation_levels",
]

# spaCy entity labels -> lower-case class labels (WordNet and DBpedia spellings) that fit them.
NER_CLASSES: dict[str, frozenset[str]] = {
    "PERSON": frozenset({"person", "human"}),
    "GPE": frozenset(
        {
            "location",
            "region",
            "place",
            "populated place",
            "country",
            "city",
            "state",
            "administrative region",
            "political unit",
            "settlement",
        }
    ),
    "LOC": frozenset(
        {"location", "region", "place", "geographical area", "body of water", "natural place", "mountain", "continent"}
    ),
    "ORG": frozenset({"organization", "organisation", "social group", "company", "institution"}),
    "NORP": frozenset({"people", "social group", "ethnic group", "religion", "nationality"}),
    "FAC": frozenset({"structure", "building", "facility", "architectural structure", "infrastructure"}),
    "EVENT": frozenset({"event", "act", "conflict", "military conflict", "war", "battle", "societal event"}),
    "WORK_OF_ART": frozenset(
        {"creation", "work", "written work", "artwork", "film", "album", "song", "musical composition", "writing"}
    ),
    "PRODUCT": frozenset({"artifact", "device", "product", "instrumentality"}),
    "LANGUAGE": frozenset({"language"}),
    "LAW": frozenset({"law", "document", "legal document"}),
}
LINK_COLUMNS = ("entity", "label", "form", "type", "typeLabel", "depth", "parent", "popularity")
CACHE_SIZE = 4096
# Each relaxation is one query, and the broad classes ("person") are the slow ones; four
# levels reach from "dramatist" to "person", from "king" to "representative".
MAX_RELAXATIONS = 4


class KnowledgeGraphError(RuntimeError):
    """The SPARQL endpoint failed, timed out or answered something unreadable."""


@dataclass(frozen=True)
class GraphType:
    iri: str
    label: str
    depth: int
    parents: frozenset[str] = frozenset()


@dataclass(frozen=True)
class LinkedEntity:
    iri: str
    label: str
    form: str
    types: tuple[GraphType, ...]
    popularity: float


@dataclass(frozen=True)
class GraphCandidate:
    iri: str
    label: str
    popularity: float
    relaxed: int  # how many depth levels of the original's types were dropped to find it (0: none)


def _value(binding: dict[str, Any], name: str) -> str | None:
    cell = binding.get(name)
    return str(cell["value"]) if isinstance(cell, dict) and "value" in cell else None


def _number(text: str | None) -> float:
    try:
        return float(text) if text is not None else 0.0
    except ValueError:
        return 0.0


def parse_links(bindings: Sequence[dict[str, Any]], forms: Sequence[str]) -> list[LinkedEntity]:
    """Group link rows (one per type and parent) by entity; best first: earliest form, most popular.

    SPARQL leaves the order of rows open, and an entity's first label and popularity are the ones
    kept, so the rows are read in a fixed order: the same graph links a form to the same entities
    whichever order an endpoint returns them in.
    """
    order = {f.lower(): i for i, f in reversed(list(enumerate(forms)))}
    grouped: dict[str, dict[str, Any]] = {}
    for row in sorted(bindings, key=_row_key):
        iri, label, form = _value(row, "entity"), _value(row, "label"), _value(row, "form")
        type_iri, type_label = _value(row, "type"), _value(row, "typeLabel")
        if not (iri and label and form and type_iri):
            continue
        entry = grouped.setdefault(
            iri, {"label": label, "form": form, "types": {}, "popularity": _number(_value(row, "popularity"))}
        )
        if order.get(form.lower(), len(order)) < order.get(entry["form"].lower(), len(order)):
            entry["form"] = form
        known = entry["types"].get(type_iri)
        parent = _value(row, "parent")
        parents = (known.parents if known else frozenset()) | ({parent} if parent else set())
        entry["types"][type_iri] = GraphType(type_iri, type_label or "", int(_number(_value(row, "depth"))), parents)
    entities = [
        LinkedEntity(iri, e["label"], e["form"], tuple(sorted(e["types"].values(), key=_type_order)), e["popularity"])
        for iri, e in grouped.items()
    ]
    return sorted(entities, key=lambda e: (order.get(e.form.lower(), len(order)), -e.popularity, -len(e.types), e.iri))


def _row_key(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(_value(row, name) or "" for name in LINK_COLUMNS)


def _type_order(t: GraphType) -> tuple[int, str]:
    return t.depth, t.iri


def compatible_with(entities: Sequence[LinkedEntity], ner_label: str) -> list[LinkedEntity]:
    """The linked entities whose types fit spaCy's label (all of them when none or no hint fits)."""
    wanted = NER_CLASSES.get(ner_label)
    if not wanted:
        return list(entities)
    fitting = [e for e in entities if any(t.label.lower() in wanted for t in e.types)]
    return fitting or list(entities)


def relaxation_levels(types: Sequence[GraphType], min_depth: int) -> list[tuple[str, ...]]:
    """Required type sets, strictest first: all types, then without the deepest level, and so on.

    Each set is given by its most specific members only: types are closed under
    superclass, so an entity of type "king" is also a "sovereign" and a "person",
    and asking for the leaves asks for the whole set (and is much cheaper).
    """
    usable = [t for t in types if t.depth >= min_depth]
    levels: list[tuple[str, ...]] = []
    for depth in sorted({t.depth for t in usable}, reverse=True):
        required = [t for t in usable if t.depth <= depth]
        inner = set().union(*(t.parents for t in required))
        leaves = tuple(sorted(t.iri for t in required if t.iri not in inner))
        if leaves not in levels:
            levels.append(leaves)
    return levels


class KnowledgeGraph:
    """A SPARQL endpoint read through one graph profile's queries."""

    def __init__(self, endpoint: str, profile: GraphProfile, *, timeout: float = 5.0) -> None:
        self.endpoint = endpoint
        self.profile = profile
        self._timeout = timeout
        # select(query) -> bindings, memoised per graph: functools' cache is thread-safe (generation runs
        # in worker threads), and a query that fails raises and is not cached.
        self.select: Callable[[str], list[dict[str, Any]]] = functools.lru_cache(maxsize=CACHE_SIZE)(self._select)

    def _select(self, query: str) -> list[dict[str, Any]]:
        """Run a SELECT and return its bindings; raises KnowledgeGraphError on any failure."""
        client = SPARQLWrapper(self.endpoint, returnFormat=JSON)
        client.setTimeout(self._timeout)  # type: ignore[arg-type]  # urllib takes a float
        client.setQuery(query)
        try:
            document: dict[str, Any] = client.queryAndConvert()  # type: ignore[assignment]  # JSON asked for
            bindings = list(document["results"]["bindings"])
        except Exception as exc:  # SPARQLWrapper raises urllib, socket and its own errors
            raise KnowledgeGraphError(f"{type(exc).__name__}: {exc}"[:300]) from exc
        return bindings

    def link(self, forms: Sequence[str]) -> list[LinkedEntity]:
        """Entities whose label or alias is one of ``forms`` (tried in that order of preference)."""
        if not forms:
            return []
        return parse_links(self.select(self.profile.link(forms)), forms)

    def same_type(
        self, entity: LinkedEntity, num: int, rng: random.Random, exclude_labels: frozenset[str] = frozenset()
    ) -> list[GraphCandidate]:
        """Up to ``num`` other entities sharing as many of ``entity``'s types as possible."""
        chosen: list[GraphCandidate] = []
        seen = {entity.label.lower(), *exclude_labels}
        levels = relaxation_levels(entity.types, self.profile.min_type_depth)[:MAX_RELAXATIONS]
        for relaxed, types in enumerate(levels):
            rows = self.select(self.profile.candidates(types, [entity.iri], limit=2 * num))
            fresh: dict[str, GraphCandidate] = {}
            for row in rows:
                label, iri = _value(row, "label"), _value(row, "entity")
                if label and iri and label.lower() not in seen and label.lower() not in fresh:
                    fresh[label.lower()] = GraphCandidate(iri, label, _number(_value(row, "popularity")), relaxed)
            picked = rng.sample(list(fresh.values()), min(len(fresh), num - len(chosen)))
            chosen += sorted(picked, key=lambda c: -c.popularity)
            seen |= {c.label.lower() for c in picked}
            if len(chosen) >= num:
                break
        return chosen
