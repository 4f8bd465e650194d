"""Evidence retrieval: latency against corpus size for bm25s and rank-bm25, and retrieval quality.

Run from the repository root::

    .venv/bin/python -m bench.retrieval                      # default corpus, 100k and 1M synthetic
    .venv/bin/python -m bench.retrieval --sizes 100000       # a quicker run

Latency: for each corpus, both engines index the same tokens and answer the
same queries (the paper's query form, built from the thirty known facts below
and from real passages), one after the other, with the process pinned to one
core. bm25s is timed through ``EvidenceIndex.search``, the code the scorer
runs, passage fetch included; rank-bm25 as ``get_scores`` plus a top-10
selection. Synthetic passages draw their words from the real corpus's word
frequencies and their lengths from its Wikipedia passages, so posting-list
lengths are realistic. rank-bm25 visits every passage for every query word,
so above 200k passages it answers only ``--slow-queries`` queries.

Quality: on the default index, for the thirty known facts, whether the article
that states the answer is among the top 10 and top 50 passages, and whether
any top passage contains the answer. Re-ranking the top 50 can only help
where the top 50 finds what the top 10 misses.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from scoring.factcheck.assets import build_factcheck_assets, load_evidence_index
from scoring.factcheck.index import K1, B, EvidenceIndex, passage_tokens, write_index
from scoring.factcheck.passages import Passage, PassageStore
from scoring.factcheck.text import evidence_query, tokenize
from scoring.settings import ScoringSettings

# (question, answer, the Wikipedia article that states it, a string the evidence must contain)
FACTS = [
    ("What is the capital of France?", "Paris is the capital of France.", "Paris", "Paris"),
    (
        "Who developed the theory of relativity?",
        "Albert Einstein developed the theory of relativity.",
        "Albert Einstein",
        "Einstein",
    ),
    (
        "What is the highest mountain on Earth?",
        "Mount Everest is the highest mountain on Earth.",
        "Mount Everest",
        "Everest",
    ),
    (
        "Who directed 2001: A Space Odyssey?",
        "Stanley Kubrick directed 2001: A Space Odyssey.",
        "2001: A Space Odyssey",
        "Kubrick",
    ),
    (
        "With whom did Marie Curie share the 1903 Nobel Prize in Physics?",
        "Marie Curie shared the 1903 Nobel Prize in Physics with her husband Pierre Curie.",
        "Marie Curie",
        "Pierre",
    ),
    (
        "What is the only natural satellite of Earth?",
        "The Moon is the only natural satellite of Earth.",
        "Moon",
        "Moon",
    ),
    (
        "Who painted A Sunday Afternoon on the Island of La Grande Jatte?",
        "Georges Seurat painted A Sunday Afternoon on the Island of La Grande Jatte.",
        "A Sunday Afternoon on the Island of La Grande Jatte",
        "Seurat",
    ),
    ("Who wrote Hamlet?", "William Shakespeare wrote Hamlet.", "Hamlet", "Shakespeare"),
    (
        "What is the largest planet in the Solar System?",
        "Jupiter is the largest planet in the Solar System.",
        "Jupiter",
        "Jupiter",
    ),
    (
        "Who was the first president of the United States?",
        "George Washington was the first president of the United States.",
        "George Washington",
        "Washington",
    ),
    ("What is the chemical symbol of gold?", "The chemical symbol of gold is Au.", "Gold", "Au"),
    ("Which river flows through Cairo?", "The Nile flows through Cairo.", "Nile", "Cairo"),
    (
        "Who composed the Ninth Symphony with the Ode to Joy?",
        "Ludwig van Beethoven composed it.",
        "Symphony No. 9 (Beethoven)",
        "Beethoven",
    ),
    ("In which year did World War II end?", "World War II ended in 1945.", "World War II", "1945"),
    (
        "What is the largest ocean on Earth?",
        "The Pacific Ocean is the largest ocean on Earth.",
        "Pacific Ocean",
        "Pacific",
    ),
    (
        "Who proposed the theory of evolution by natural selection?",
        "Charles Darwin proposed the theory of evolution by natural selection.",
        "Charles Darwin",
        "Darwin",
    ),
    ("What is the capital of Japan?", "Tokyo is the capital of Japan.", "Tokyo", "Tokyo"),
    ("Who discovered penicillin?", "Alexander Fleming discovered penicillin.", "Alexander Fleming", "Fleming"),
    ("Which element has atomic number 1?", "Hydrogen has atomic number 1.", "Hydrogen", "Hydrogen"),
    ("Who wrote War and Peace?", "Leo Tolstoy wrote War and Peace.", "War and Peace", "Tolstoy"),
    (
        "What is the longest river in South America?",
        "The Amazon River is the longest river in South America.",
        "Amazon River",
        "Amazon",
    ),
    (
        "Who was the first person to walk on the Moon?",
        "Neil Armstrong was the first person to walk on the Moon.",
        "Neil Armstrong",
        "Armstrong",
    ),
    (
        "What currency is used in most of the European Union?",
        "The euro is the currency of most of the EU.",
        "Euro",
        "euro",
    ),
    ("Who invented the telephone?", "Alexander Graham Bell invented the telephone.", "Alexander Graham Bell", "Bell"),
    ("What is the capital of Australia?", "Canberra is the capital of Australia.", "Australia", "Canberra"),
    ("Who painted the Mona Lisa?", "Leonardo da Vinci painted the Mona Lisa.", "Mona Lisa", "Leonardo"),
    (
        "Which gas do plants absorb for photosynthesis?",
        "Plants absorb carbon dioxide for photosynthesis.",
        "Photosynthesis",
        "carbon dioxide",
    ),
    ("Who founded Microsoft with Paul Allen?", "Bill Gates founded Microsoft with Paul Allen.", "Microsoft", "Gates"),
    ("What is the smallest prime number?", "The smallest prime number is 2.", "Prime number", "2"),
    (
        "Who wrote the Communist Manifesto with Friedrich Engels?",
        "Karl Marx wrote The Communist Manifesto with Friedrich Engels.",
        "The Communist Manifesto",
        "Marx",
    ),
]


@dataclass(frozen=True)
class Row:
    corpus: str
    passages: int
    engine: str
    build_s: float
    latencies_ms: list[float]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def build_queries(store: PassageStore, count: int, rng: random.Random) -> list[list[str]]:
    """The known facts, then questions about random real passages, in the paper's query form."""
    queries = [tokenize(evidence_query(question, answer)) for question, answer, _, _ in FACTS]
    while len(queries) < count:
        passage = store[rng.randrange(len(store))]
        answer = " ".join(passage.text.split()[:12])
        queries.append(tokenize(evidence_query(f"What is {passage.title}?", answer)))
    return queries[:count]


def synthetic_passages(store: PassageStore, count: int, seed: int) -> Iterator[Passage]:
    """Passages of real words drawn at their corpus frequency, with Wikipedia passages' lengths."""
    counts: Counter[str] = Counter()
    lengths = []
    for row in range(len(store)):
        passage = store[row]
        tokens = passage_tokens(passage)
        counts.update(tokens)
        if passage.id.startswith("wikipedia:"):
            lengths.append(len(tokens))
    words = [word for word in counts if tokenize(word) == [word]]  # re-tokenizing a passage changes nothing
    weights = np.array([counts[word] for word in words], dtype=np.float64)
    rng = np.random.default_rng(seed)
    sizes = rng.choice(np.array(lengths), size=count)
    for start in range(0, count, 10_000):
        block = sizes[start : start + 10_000]
        drawn = rng.choice(len(words), size=int(block.sum()), p=weights / weights.sum())
        offset = 0
        for number, size in enumerate(block, start=start):
            text = " ".join(words[i] for i in drawn[offset : offset + size])
            offset += size
            yield Passage(f"synthetic:{number}", "", text)


def measure_bm25s(directory: Path, queries: list[list[str]]) -> list[float]:
    index = EvidenceIndex.load(directory)
    for query in queries[:5]:
        index.search(query, 10)  # warm the memory-mapped arrays, as a serving process would be
    return [timed(lambda q=query: index.search(q, 10)) for query in queries]


def measure_rank_bm25(store: PassageStore, queries: list[list[str]]) -> tuple[float, list[float]]:
    started = time.perf_counter()
    engine = BM25Okapi([passage_tokens(store[row]) for row in range(len(store))], k1=K1, b=B)
    build_s = time.perf_counter() - started

    def search(query: list[str]) -> None:
        scores = engine.get_scores(query)
        top = np.argpartition(-scores, 10)[:10]
        top[np.argsort(-scores[top])]

    return build_s, [timed(lambda q=query: search(q)) for query in queries]


def bench_corpus(name: str, directory: Path, build_s: float, queries: list[list[str]], slow_queries: int) -> None:
    store = PassageStore(directory)
    print_row(Row(name, len(store), "bm25s", build_s, measure_bm25s(directory, queries)))
    rank_queries = queries if len(store) <= 200_000 else queries[:slow_queries]
    print_row(Row(name, len(store), "rank-bm25", *measure_rank_bm25(store, rank_queries)))


def quality(index: EvidenceIndex) -> None:
    """How often the evidence holds the answer, at 10 and 50 passages."""
    found = {10: [0, 0], 50: [0, 0]}
    for question, answer, title, key in FACTS:
        hits = index.search(tokenize(evidence_query(question, answer)), 50)
        question_words = set(tokenize(question))
        for k in found:
            top = hits[:k]
            found[k][0] += any(hit.id.split("#")[0] == f"wikipedia:{title}" for hit in top)
            found[k][1] += any(
                key in hit.text and question_words & set(tokenize(f"{hit.title} {hit.text}")) for hit in top
            )
    print(f"\nRetrieval quality on the default index ({len(FACTS)} known facts)\n")
    print("| top k | article that states the answer retrieved | a passage contains the answer |")
    print("|---:|---:|---:|")
    for k, (article, answer) in found.items():
        print(f"| {k} | {article}/{len(FACTS)} | {answer}/{len(FACTS)} |")


def print_header() -> None:
    print("\nRetrieval latency, one core, top 10 (ms per query)\n")
    print("| corpus | passages | engine | index build (s) | queries | p50 (ms) | p99 (ms) | mean (ms) |")
    print("|---|---:|---|---:|---:|---:|---:|---:|", flush=True)


def print_row(row: Row) -> None:
    latencies = row.latencies_ms
    print(
        f"| {row.corpus} | {row.passages:,} | {row.engine} | {row.build_s:.1f} | {len(latencies)} | "
        f"{percentile(latencies, 0.5):.2f} | {percentile(latencies, 0.99):.2f} | "
        f"{statistics.fmean(latencies):.2f} |",
        flush=True,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.retrieval", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", type=int, nargs="*", default=[100_000, 1_000_000], help="synthetic corpus sizes (passages)"
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--slow-queries", type=int, default=20, help="rank-bm25's queries above 200k passages")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    with tempfile.TemporaryDirectory(prefix="bench-retrieval-") as scratch:
        settings = ScoringSettings(data_dir=Path(scratch) / "data")
        started = time.perf_counter()
        build_factcheck_assets(settings)
        default_build_s = time.perf_counter() - started
        index = load_evidence_index(settings)
        assert index is not None, "no packaged corpus installed: run `make install`"
        default_dir = Path(scratch) / "data" / "factcheck" / "index"
        store = PassageStore(default_dir)
        queries = build_queries(store, args.queries, random.Random(args.seed))
        quality(index)
        print_header()
        bench_corpus("default (Wikipedia + WordNet)", default_dir, default_build_s, queries, args.slow_queries)
        for size in args.sizes:
            directory = Path(scratch) / f"synthetic-{size}"
            passages = list(synthetic_passages(store, size, args.seed))
            started = time.perf_counter()
            write_index(iter(passages), directory)
            build_s = time.perf_counter() - started
            del passages
            bench_corpus(f"synthetic {size:,}", directory, build_s, queries, args.slow_queries)


if __name__ == "__main__":
    main()
