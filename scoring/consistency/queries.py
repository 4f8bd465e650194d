"""Every SPARQL query the consistency scorer sends, one query set per graph profile.

A profile says how its graph spells four things: how a surface form links to an
entity (with aliases or redirects), an entity's types with their depth in the
class hierarchy, the entities having a set of types, and their popularity. The
code that links and relaxes types (``knowledge.py``) is the same for every
profile; only these strings differ.

``local`` is the graph built at install time (``graph_build.py``): WordNet
instances and Wikipedia vital articles, keyed by lower-case forms, typed by
WordNet synsets with their longest-path depth materialised. ``dbpedia`` is the
public DBpedia schema: ``rdf:type dbo:*``, ``rdfs:label``@en and
``dbo:wikiPageRedirects`` for aliases; depth counts the class's superclasses and
popularity is ``dbo:wikiPageLength`` (a cheap stand-in for in-links).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = ["PROFILES", "TG", "GraphProfile", "sparql_iri", "sparql_string"]

TG = "urn:trustgate:kg:"  # the local graph's namespace

_PREFIXES = """PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX dbo: <http://dbpedia.org/ontology/>
PREFIX tg: <urn:trustgate:kg:>
"""


def sparql_string(text: str, language: str | None = None) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"' + (f"@{language}" if language else "")


def sparql_iri(iri: str) -> str:
    if any(ch in iri for ch in '<>"{}|^`\\ \n'):
        raise ValueError(f"not an IRI: {iri!r}")
    return f"<{iri}>"


@dataclass(frozen=True)
class GraphProfile:
    """One graph's spelling of the link and candidate queries.

    ``link`` returns ?entity ?label ?form ?type ?typeLabel ?depth ?parent ?popularity, a row per
    type and direct superclass (the entity's types are closed under superclass, as in DBpedia);
    ``candidates`` returns ?entity ?label ?popularity, most popular first, in a total order (ties by label,
    then entity), so that the rows kept under its limit and their order never depend on the endpoint.
    """

    name: Literal["local", "dbpedia"]
    link_template: str
    candidates_template: str
    form_case: Literal["lower", "as_written"]
    form_language: str | None
    min_type_depth: int  # types shallower than this never constrain candidates (e.g. "entity")

    def form(self, text: str) -> str:
        return sparql_string(text.lower() if self.form_case == "lower" else text, self.form_language)

    def link(self, forms: Iterable[str]) -> str:
        values = " ".join(dict.fromkeys(self.form(f) for f in forms))
        return _PREFIXES + self.link_template.replace("$FORMS", values)

    def candidates(self, types: Iterable[str], exclude: Iterable[str], limit: int) -> str:
        type_list = ", ".join(sparql_iri(t) for t in types)
        excluded = ", ".join(sparql_iri(e) for e in exclude) or "<urn:trustgate:none>"
        return _PREFIXES + (
            self.candidates_template.replace("$TYPES", type_list)
            .replace("$EXCLUDE", excluded)
            .replace("$LIMIT", str(int(limit)))
        )


LOCAL = GraphProfile(
    name="local",
    link_template="""SELECT ?entity ?label ?form ?type ?typeLabel ?depth ?parent ?popularity WHERE {
  VALUES ?form { $FORMS }
  ?entity tg:key ?form ; rdfs:label ?label ; rdf:type ?type .
  ?type tg:depth ?depth ; rdfs:label ?typeLabel .
  OPTIONAL { ?type rdfs:subClassOf ?parent }
  OPTIONAL { ?entity tg:popularity ?popularity }
}""",
    candidates_template="""SELECT DISTINCT ?entity ?label ?popularity WHERE {
  ?entity rdf:type $TYPES ; rdfs:label ?label .
  OPTIONAL { ?entity tg:popularity ?popularity }
  FILTER(?entity NOT IN ($EXCLUDE))
} ORDER BY DESC(?popularity) ?label ?entity LIMIT $LIMIT""",
    form_case="lower",
    form_language=None,
    min_type_depth=4,
)

DBPEDIA = GraphProfile(
    name="dbpedia",
    link_template="""SELECT ?entity ?label ?form ?type ?typeLabel ?depth ?parent ?popularity WHERE {
  { SELECT ?entity ?form ?type (COUNT(DISTINCT ?super) AS ?depth) WHERE {
      VALUES ?form { $FORMS }
      ?source rdfs:label ?form .
      OPTIONAL { ?source dbo:wikiPageRedirects ?target }
      BIND(COALESCE(?target, ?source) AS ?entity)
      ?entity rdf:type ?type .
      FILTER(STRSTARTS(STR(?type), "http://dbpedia.org/ontology/"))
      ?type rdfs:subClassOf* ?super .
    } GROUP BY ?entity ?form ?type }
  ?entity rdfs:label ?label . FILTER(LANG(?label) = "en")
  ?type rdfs:label ?typeLabel . FILTER(LANG(?typeLabel) = "en")
  OPTIONAL { ?type rdfs:subClassOf ?parent }
  OPTIONAL { ?entity dbo:wikiPageLength ?popularity }
}""",
    candidates_template="""SELECT DISTINCT ?entity ?label ?popularity WHERE {
  ?entity rdf:type $TYPES ; rdfs:label ?label .
  FILTER(LANG(?label) = "en")
  OPTIONAL { ?entity dbo:wikiPageLength ?popularity }
  FILTER(?entity NOT IN ($EXCLUDE))
} ORDER BY DESC(?popularity) ?label ?entity LIMIT $LIMIT""",
    form_case="as_written",
    form_language="en",
    min_type_depth=1,
)

PROFILES: dict[str, GraphProfile] = {p.name: p for p in (LOCAL, DBPEDIA)}
