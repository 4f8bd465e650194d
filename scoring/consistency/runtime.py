"""Load the consistency scorer's heavy parts, and serve the local graph.

The process that scores enters ``local_sparql_endpoint(settings)`` for its
lifetime: it starts the embedded Oxigraph server when no SPARQL endpoint is
configured. Wherever scoring's CPU work runs (``scoring.cpu_pool``: a worker
process, or the scoring process itself), ``load_generator`` loads the spaCy
pipeline, vectors and vocabulary there once; requests then only use what was
loaded.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
from collections.abc import AsyncIterator
from pathlib import Path

import spacy
from gensim.models import KeyedVectors
from spacy.language import Language

from ..settings import ConsistencySettings, ScoringSettings
from .distractors import DistractorGenerator
from .embedding import WordEmbeddings, read_vocabulary
from .knowledge import KnowledgeGraph
from .oxigraph import serve_oxigraph
from .paths import AssetPaths, asset_paths
from .queries import PROFILES
from .substitution import SubstituteSources

__all__ = ["load_embeddings", "load_generator", "load_nlp", "local_sparql_endpoint", "make_generator"]


def load_nlp(model: str) -> Language:
    """The answer parser: tagger, lemmatizer and NER; the dependency parser is not needed."""
    return spacy.load(model, exclude=["parser"])


def load_vectors(path: Path) -> KeyedVectors:
    """A user's vectors file: word2vec binary (.bin), word2vec text (.txt, .vec) or gensim's own format."""
    if path.suffix == ".bin":
        return KeyedVectors.load_word2vec_format(str(path), binary=True)
    if path.suffix in (".txt", ".vec"):
        return KeyedVectors.load_word2vec_format(str(path), binary=False)
    return KeyedVectors.load(str(path))


def load_embeddings(settings: ConsistencySettings, paths: AssetPaths) -> WordEmbeddings:
    """The configured vectors (or the built ones) with the built vocabulary's POS tags."""
    vectors_file = Path(settings.vectors_path) if settings.vectors_path else paths.vectors
    for needed in (vectors_file, paths.vocabulary):
        if not needed.exists():
            raise FileNotFoundError(errno.ENOENT, "run `python -m scoring.consistency.assets`", str(needed))
    return WordEmbeddings(load_vectors(vectors_file), read_vocabulary(paths.vocabulary))


def make_generator(
    nlp: Language, embeddings: WordEmbeddings | None, endpoint: str | None, settings: ConsistencySettings
) -> DistractorGenerator:
    graph = (
        KnowledgeGraph(endpoint, PROFILES[settings.graph_profile], timeout=settings.sparql_timeout_s)
        if endpoint
        else None
    )
    return DistractorGenerator(nlp, SubstituteSources(graph, embeddings, datetime.date.today().year))


@contextlib.asynccontextmanager
async def local_sparql_endpoint(settings: ScoringSettings) -> AsyncIterator[str]:
    """The configured endpoint, or the embedded Oxigraph server over the built store."""
    if settings.consistency.sparql_endpoint:
        yield settings.consistency.sparql_endpoint
        return
    async with serve_oxigraph(asset_paths(settings).store, port=settings.consistency.oxigraph_port) as url:
        yield url


def load_generator(settings: ScoringSettings, endpoint: str | None) -> DistractorGenerator:
    """The distractor generator over the built assets and the graph at ``endpoint`` (built assets needed)."""
    consistency = settings.consistency
    return make_generator(
        load_nlp(consistency.spacy_model), load_embeddings(consistency, asset_paths(settings)), endpoint, consistency
    )
