"""Train word vectors and a POS-tagged vocabulary from the packaged Wikipedia text.

The paper used word2vec-google-news-300; nothing like it can be downloaded
here, so the gateway trains its own at install time on the vital-article
summaries (about 850k tokens). One spaCy tagging pass yields both the training
tokens (tokenised as answers will be) and each word's most frequent Penn tag,
which the embedding source uses to keep same-POS neighbours and the random
source to sample same-POS words. Case is kept: "Florida" and "florida" are
different words to a distractor.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gensim.models import KeyedVectors, Word2Vec
from spacy.language import Language

__all__ = [
    "TaggedCorpus",
    "VectorOptions",
    "read_sentences",
    "tag_corpus",
    "train_vectors",
    "write_sentences",
    "write_vocabulary",
]

_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class VectorOptions:
    """Word2Vec settings. CBOW with 20 epochs won ``bench.distractors --compare-vectors``: it gave
    3 usable substitutes for more answer words than skip-gram (10 or 20 epochs) and trains fastest."""

    vector_size: int = 100
    window: int = 5
    min_count: int = 3
    epochs: int = 20
    sg: int = 0
    workers: int = 2
    seed: int = 13


@dataclass
class TaggedCorpus:
    sentences: list[list[str]]
    tags: dict[str, Counter[str]]  # word -> how often it carried each Penn tag

    def count(self, word: str) -> int:
        return sum(self.tags[word].values())


def tag_corpus(nlp: Language, texts: Iterable[str], *, n_process: int = 1, batch_size: int = 64) -> TaggedCorpus:
    """Tokenise and tag ``texts``; ``nlp`` needs only its tagger (exclude the rest for speed)."""
    sentences: list[list[str]] = []
    tags: dict[str, Counter[str]] = {}
    for doc in nlp.pipe(texts, n_process=n_process, batch_size=batch_size):
        tokens = [t for t in doc if _WORD.search(t.text)]
        sentences.append([t.text for t in tokens])
        for token in tokens:
            tags.setdefault(token.text, Counter())[token.tag_] += 1
    return TaggedCorpus(sentences, tags)


def train_vectors(sentences: Sequence[list[str]], options: VectorOptions = VectorOptions()) -> KeyedVectors:
    model = Word2Vec(
        sentences=sentences,
        vector_size=options.vector_size,
        window=options.window,
        min_count=options.min_count,
        workers=options.workers,
        sg=options.sg,
        epochs=options.epochs,
        seed=options.seed,
    )
    return model.wv


def write_vocabulary(path: Path, corpus: TaggedCorpus, min_count: int, tag_share: float = 0.1) -> None:
    """``word<TAB>tag,tag...<TAB>count`` lines, most frequent word first; a word's tags are those
    carried by at least ``tag_share`` of its occurrences, most frequent first."""
    words = sorted(corpus.tags, key=lambda w: (-corpus.count(w), w))
    with path.open("w", encoding="utf-8") as out:
        for word in words:
            total = corpus.count(word)
            if total < min_count:
                break
            if "\t" in word or "\n" in word:
                continue
            kept = [tag for tag, n in corpus.tags[word].most_common() if n >= tag_share * total]
            out.write(f"{word}\t{','.join(kept)}\t{total}\n")


def write_sentences(path: Path, sentences: Iterable[list[str]]) -> None:
    """One document per line, tokens separated by spaces (spaCy tokens hold no spaces)."""
    with path.open("w", encoding="utf-8") as out:
        for sentence in sentences:
            out.write(" ".join(sentence) + "\n")


def read_sentences(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8") as handle:
        return [line.split() for line in handle]
