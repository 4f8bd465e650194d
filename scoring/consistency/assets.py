"""Build the consistency scorer's assets at install time: ``python -m scoring.consistency.assets``.

Under ``<data_dir>/consistency/``:

* ``graph.nt``: the local knowledge graph (``graph_build.py``);
* ``oxigraph/``: an Oxigraph store with that graph loaded, served read-only at run time;
* ``corpus.tok`` and ``vocabulary.tsv``: the tokenised Wikipedia text and its
  POS-tagged vocabulary, from one spaCy pass (the slow step);
* ``vectors.bin``: word2vec vectors trained on ``corpus.tok`` (``vectors_build.py``).

Each step is skipped when its output exists and is written under a temporary
name first, so an interrupted build never leaves a half-written asset that a
later run would mistake for a finished one.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import time
from pathlib import Path

import spacy

from ..settings import ScoringSettings
from .graph_build import build_graph, write_ntriples
from .oxigraph import oxigraph_load
from .packaged import load_articles, noun_index, noun_synsets
from .paths import AssetPaths, asset_paths
from .vectors_build import VectorOptions, read_sentences, tag_corpus, train_vectors, write_sentences, write_vocabulary

__all__ = ["build_consistency_assets"]

log = logging.getLogger(__name__)

VOCABULARY_MIN_COUNT = 2


def _build_graph(paths: AssetPaths) -> dict[str, int]:
    data = build_graph(noun_synsets(), noun_index(), load_articles())
    partial = paths.graph.with_suffix(".nt.partial")
    triples = write_ntriples(partial, data.entities, data.types, data.popularity)
    partial.replace(paths.graph)
    return {"entities": len(data.entities), "types": len(data.types), "triples": triples}


def _load_store(paths: AssetPaths) -> None:
    partial = paths.store.with_name("oxigraph.partial")
    shutil.rmtree(partial, ignore_errors=True)
    oxigraph_load(partial, paths.graph)
    shutil.rmtree(paths.store, ignore_errors=True)  # a store left without CURRENT is unusable
    partial.replace(paths.store)


def _tag_corpus(paths: AssetPaths, spacy_model: str) -> dict[str, int]:
    nlp = spacy.load(spacy_model, exclude=["parser", "ner", "lemmatizer", "attribute_ruler"])
    corpus = tag_corpus(nlp, [a.extract for a in load_articles() if a.extract], n_process=2)
    vocabulary_partial = paths.vocabulary.with_suffix(".tsv.partial")
    write_vocabulary(vocabulary_partial, corpus, VOCABULARY_MIN_COUNT)
    corpus_partial = paths.corpus.with_suffix(".tok.partial")
    write_sentences(corpus_partial, corpus.sentences)
    vocabulary_partial.replace(paths.vocabulary)
    corpus_partial.replace(paths.corpus)
    return {"tokens": sum(len(s) for s in corpus.sentences), "words": len(corpus.tags)}


def _train_vectors(paths: AssetPaths) -> dict[str, int]:
    vectors = train_vectors(read_sentences(paths.corpus), VectorOptions())
    partial = paths.vectors.with_suffix(".bin.partial")
    vectors.save_word2vec_format(str(partial), binary=True)
    partial.replace(paths.vectors)
    return {"vectors": len(vectors.index_to_key)}


def build_consistency_assets(settings: ScoringSettings) -> None:
    """Build what is missing of the graph, its Oxigraph store and the word vectors (idempotent)."""
    paths = asset_paths(settings)
    paths.root.mkdir(parents=True, exist_ok=True)
    report: dict[str, object] = {}
    steps = [
        ("graph", lambda: paths.graph.exists(), lambda: _build_graph(paths)),
        ("store", lambda: (paths.store / "CURRENT").exists(), lambda: _load_store(paths)),
        (
            "corpus",
            lambda: paths.corpus.exists() and paths.vocabulary.exists(),
            lambda: _tag_corpus(paths, settings.consistency.spacy_model),
        ),
        ("vectors", lambda: paths.vectors.exists(), lambda: _train_vectors(paths)),
    ]
    for number, (name, done, build) in enumerate(steps, 1):
        if done():
            log.info("consistency asset %d/%d %s: present, skipped", number, len(steps), name)
            continue
        log.info("consistency asset %d/%d %s: building ...", number, len(steps), name)
        started = time.perf_counter()
        facts = build()
        report[name] = {"seconds": round(time.perf_counter() - started, 2), **(facts or {})}
        log.info("consistency asset %s: built %s", name, report[name])
    if report:
        previous = json.loads(paths.manifest.read_text()) if paths.manifest.exists() else {}
        paths.manifest.write_text(json.dumps({**previous, **report}, indent=2))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ScoringSettings().data_dir)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("gensim").setLevel(logging.WARNING)  # per-epoch progress lines
    started = time.perf_counter()
    build_consistency_assets(ScoringSettings(data_dir=args.data_dir))
    print(f"consistency assets ready under {args.data_dir / 'consistency'} in {time.perf_counter() - started:.1f}s")


if __name__ == "__main__":
    main()
