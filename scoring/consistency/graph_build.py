"""Build the local knowledge graph (N-Triples) from WordNet and Wikipedia vital articles.

The graph answers one question for distractor generation: "which other
entities share this entity's types, and which are the popular ones?" So it
holds, in the schema ``queries.LOCAL`` reads:

* entities: every WordNet instance synset (Florida, Solomon, the Revolutionary
  War) and every vital article (its title, description and topic);
* types: WordNet noun synsets. An instance is typed by its ``@i`` parents and all
  their hypernyms (materialised, as DBpedia materialises ``rdf:type``); an
  article by the WordNet synset of its description's head noun ("City in Mali"
  -> city) plus a narrower type for the modified head ("U.S. state");
* ``tg:key``: the lower-case label and aliases that entity linking matches;
* ``tg:popularity``: in how many corpus documents (article extracts, WordNet
  glosses) a label or alias is mentioned, the graph's stand-in for in-links.
"""

from __future__ import annotations

import re
import urllib.parse
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .packaged import Article, Synset
from .queries import TG

__all__ = [
    "EntityRecord",
    "KnowledgeGraphData",
    "TypeRecord",
    "build_graph",
    "description_head",
    "mention_counts",
    "preferred_label",
    "write_ntriples",
]

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
RDFS_SUBCLASS = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
RDFS_COMMENT = "http://www.w3.org/2000/01/rdf-schema#comment"
MAX_KEY_WORDS = 6


@dataclass
class TypeRecord:
    iri: str
    label: str
    depth: int
    parents: tuple[str, ...] = ()


@dataclass
class EntityRecord:
    iri: str
    label: str
    aliases: tuple[str, ...] = ()
    types: set[str] = field(default_factory=set)
    description: str = ""
    topic: str = ""

    @property
    def keys(self) -> set[str]:
        return {normalise_key(form) for form in (self.label, *self.aliases) if normalise_key(form)}


def normalise_key(text: str) -> str:
    return " ".join(text.lower().split())


def synset_iri(offset: str) -> str:
    return f"{TG}wn-{offset}"


def type_depths(synsets: dict[str, Synset]) -> dict[str, int]:
    """Longest hypernym path from the root: a stable "how specific" for each class."""
    depths: dict[str, int] = {}

    def depth(offset: str, trail: frozenset[str]) -> int:
        if offset not in depths:
            parents = [
                p for p in synsets[offset].hypernyms + synsets[offset].instance_of if p in synsets and p not in trail
            ]
            depths[offset] = 1 + max((depth(p, trail | {offset}) for p in parents), default=-1)
        return depths[offset]

    for offset in synsets:
        depth(offset, frozenset())
    return depths


def _ancestors(synsets: dict[str, Synset], roots: Iterable[str]) -> set[str]:
    seen: set[str] = set()
    stack = [r for r in roots if r in synsets]
    while stack:
        offset = stack.pop()
        if offset not in seen:
            seen.add(offset)
            stack.extend(p for p in synsets[offset].hypernyms if p in synsets)
    return seen


def type_records(synsets: dict[str, Synset], used: set[str], depths: dict[str, int]) -> list[TypeRecord]:
    """The class synsets that type some entity, with their depth and direct parents."""
    return [
        TypeRecord(
            synset_iri(o),
            synsets[o].lemmas[0],
            depths[o],
            tuple(synset_iri(p) for p in synsets[o].hypernyms if p in used),
        )
        for o in sorted(used)
    ]


def preferred_label(lemmas: Sequence[str]) -> str:
    """WordNet lists people by surname first ("More", "Thomas More"); a distractor needs the full name.

    The first lemma, unless a later one extends it word for word ("Charles" ->
    "Charles I", "Lewis" -> "C. S. Lewis"); "Florida" stays "Florida", not "Sunshine State".
    """
    first = lemmas[0]
    for lemma in lemmas[1:]:
        if f" {first} " in f" {lemma} ":
            return lemma
    return first


def wordnet_entities(synsets: dict[str, Synset]) -> tuple[list[EntityRecord], set[str]]:
    """Instance synsets as entities, and the class synsets (offsets) their types use."""
    entities: list[EntityRecord] = []
    used: set[str] = set()
    for synset in synsets.values():
        if not synset.instance_of:
            continue
        types = _ancestors(synsets, synset.instance_of)
        used |= types
        label = preferred_label(synset.lemmas)
        entities.append(
            EntityRecord(
                synset_iri(synset.offset),
                label,
                tuple(x for x in synset.lemmas if x != label),
                {synset_iri(t) for t in types},
                description=synset.gloss,
            )
        )
    return entities, used


_HEAD_STOP = re.compile(
    r"\s(?:of|in|on|at|by|for|from|to|with|who|which|that|and|or|used|based|"
    r"directed|written|founded|located|known|made|between|during|near)\s|[(,;:]"
)


def description_head(description: str) -> tuple[str, str] | None:
    """("U.S. state" -> ("state", "U.S.")): the head noun and the word modifying it.

    Wikidata-style descriptions put the class first: "City in Tombouctou Region,
    Mali", "English theologian (1328-1384)", "1968 film by Stanley Kubrick".
    """
    phrase = _HEAD_STOP.split(f" {description} ", maxsplit=1)[0].split()
    words = [w for w in phrase if re.search(r"[A-Za-z]", w)]
    if not words:
        return None
    head = words[-1].lower()
    modifier = words[-2] if len(words) > 1 and not re.search(r"\d", words[-2]) else ""
    return head, modifier


def _noun_lemma(word: str, index: dict[str, list[str]]) -> str | None:
    for suffix, replacement in (
        ("", ""),
        ("ies", "y"),
        ("ches", "ch"),
        ("shes", "sh"),
        ("ses", "s"),
        ("xes", "x"),
        ("men", "man"),
        ("s", ""),
    ):
        if word.endswith(suffix):
            lemma = word[: len(word) - len(suffix)] + replacement if suffix else word
            if lemma in index:
                return lemma
    return None


def article_records(
    articles: Sequence[Article], synsets: dict[str, Synset], index: dict[str, list[str]], depths: dict[str, int]
) -> tuple[list[EntityRecord], list[TypeRecord], set[str]]:
    """Vital articles as entities typed by their description; returns extra narrow types and the
    WordNet class synsets they use."""
    entities: list[EntityRecord] = []
    narrow: dict[str, TypeRecord] = {}
    used: set[str] = set()
    for article in articles:
        label = re.sub(r"\s*\([^)]*\)$", "", article.title).strip()
        aliases = (article.title,) if label != article.title else ()
        record = EntityRecord(
            f"{TG}wiki-{urllib.parse.quote(article.title, safe='')}",
            label,
            aliases,
            description=article.description,
            topic=article.topic,
        )
        head = description_head(article.description)
        lemma = _noun_lemma(head[0], index) if head else None
        if head and lemma:
            compound = f"{head[1].lower()} {lemma}" if head[1] else ""
            offset = index[compound][0] if compound in index else index[lemma][0]
            types = _ancestors(synsets, [offset])
            used |= types
            record.types = {synset_iri(t) for t in types}
            if head[1] and compound not in index:
                narrow_label = f"{head[1]} {lemma}"
                iri = f"{TG}desc-{urllib.parse.quote(normalise_key(narrow_label), safe='')}"
                narrow[iri] = TypeRecord(iri, narrow_label, depths[offset] + 1, (synset_iri(offset),))
                record.types.add(iri)
        entities.append(record)
    return entities, list(narrow.values()), used


_WORD = re.compile(r"[\w.'-]+")


def mention_counts(keys: set[str], documents: Iterable[str]) -> Counter[str]:
    """Document frequency of each key (a lower-case form of up to MAX_KEY_WORDS words)."""
    firsts = {k.split(" ", 1)[0] for k in keys}
    counts: Counter[str] = Counter()
    for document in documents:
        tokens = [t.strip(".'-") for t in _WORD.findall(document.lower())]
        seen: set[str] = set()
        for i, token in enumerate(tokens):
            if token not in firsts:
                continue
            for n in range(1, MAX_KEY_WORDS + 1):
                gram = " ".join(tokens[i : i + n])
                if gram in keys:
                    seen.add(gram)
        counts.update(seen)
    return counts


def _literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def _integer(value: int) -> str:
    return f'"{value}"^^<http://www.w3.org/2001/XMLSchema#integer>'


def write_ntriples(
    path: Path, entities: Sequence[EntityRecord], types: Sequence[TypeRecord], popularity: dict[str, int]
) -> int:
    """Write the graph; returns the number of triples."""
    count = 0
    with path.open("w", encoding="utf-8") as out:

        def triple(s: str, p: str, o: str) -> None:
            nonlocal count
            out.write(f"<{s}> <{p}> {o} .\n")
            count += 1

        for t in types:
            triple(t.iri, RDFS_LABEL, _literal(t.label))
            triple(t.iri, f"{TG}depth", _integer(t.depth))
            for parent in t.parents:
                triple(t.iri, RDFS_SUBCLASS, f"<{parent}>")
        for e in entities:
            triple(e.iri, RDFS_LABEL, _literal(e.label))
            for alias in e.aliases:
                triple(e.iri, f"{TG}alias", _literal(alias))
            for key in sorted(e.keys):
                triple(e.iri, f"{TG}key", _literal(key))
            for type_iri in sorted(e.types):
                triple(e.iri, RDF_TYPE, f"<{type_iri}>")
            triple(e.iri, f"{TG}popularity", _integer(popularity.get(e.iri, 0)))
            if e.description:
                triple(e.iri, RDFS_COMMENT, _literal(e.description))
            if e.topic:
                triple(e.iri, f"{TG}topic", _literal(e.topic))
    return count


@dataclass
class KnowledgeGraphData:
    entities: list[EntityRecord]
    types: list[TypeRecord]
    popularity: dict[str, int]


def build_graph(
    synsets: dict[str, Synset], index: dict[str, list[str]], articles: Sequence[Article]
) -> KnowledgeGraphData:
    """WordNet instances and vital articles, typed, keyed and ranked by corpus mentions."""
    depths = type_depths(synsets)
    instances, used = wordnet_entities(synsets)
    documents, narrow, used_by_articles = article_records(articles, synsets, index, depths)
    entities = instances + documents
    types = type_records(synsets, used | used_by_articles, depths) + narrow
    keys = set().union(*(e.keys for e in entities))
    corpus = [a.extract for a in articles] + [s.gloss for s in synsets.values()]
    mentions = mention_counts({k for k in keys if len(k.split()) <= MAX_KEY_WORDS}, corpus)
    popularity = {e.iri: max((mentions[k] for k in e.keys), default=0) for e in entities}
    return KnowledgeGraphData(entities, types, popularity)
