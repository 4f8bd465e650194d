"""Trust_BC distractors: generation time, coverage, and upstream calls per scored answer.

Run from the repository root once the assets are built::

    .venv/bin/python -m scoring.consistency.assets
    .venv/bin/python -m bench.distractors [--answers 300] [--compare-vectors]

Three measurements, printed as markdown tables:

1. Generation, warm: per answer, the wall and CPU time of ``DistractorGenerator.generate``
   (spaCy parse, target selection, SPARQL to the embedded Oxigraph server, embedding
   look-ups) on model answers from MixedQA (read from ``../shared/eval``, never
   copied), after a warm-up on other answers. Coverage: how many answers get 3
   distinct distractors for the first check and fresh ones for all 10 checks, and
   which source the first check's distractors came from.
2. Upstream calls per scored answer for ``binary``, ``graded`` and ``adaptive``
   Trust_BC, against the fake upstream (a real HTTP server) answering with a
   scripted policy: it picks the original with probability 0.95 when MixedQA's
   human label says the answer is correct, 0.35 when not.
3. With ``--compare-vectors``: vectors trained with other Word2Vec settings on the
   same tokenised corpus, compared on the share of raw neighbours that are usable
   (same POS, not a near-duplicate), the share of answer words that get 3 usable
   substitutes, and, for entities in the local graph, how many substitutes share
   the entity's most specific type.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scoring.consistency.distractors import DistractorDeck, DistractorGenerator, DistractorPool
from scoring.consistency.embedding import WordEmbeddings, near_duplicate, read_vocabulary, tag_fits
from scoring.consistency.knowledge import KnowledgeGraph, compatible_with
from scoring.consistency.oxigraph import serve_oxigraph
from scoring.consistency.paths import AssetPaths, asset_paths
from scoring.consistency.queries import PROFILES
from scoring.consistency.runtime import load_embeddings, load_nlp, make_generator
from scoring.consistency.scorer import ConsistencyScorer
from scoring.consistency.selection import select_targets
from scoring.consistency.vectors_build import VectorOptions, read_sentences, train_vectors
from scoring.cpu_pool import CpuParts, InThreads
from scoring.settings import ConsistencySettings, ScoringSettings
from scoring.types import ScoringJob

REPO = Path(__file__).resolve().parent.parent
MIXEDQA = REPO.parent / "shared" / "eval" / "mixedqa_human_labels.json"
COMMAND = ".venv/bin/python -m bench.distractors"
WANTED = 30  # 3 distractors x 10 checks
WARMUP = 20


@dataclass(frozen=True)
class Answer:
    question: str
    answer: str
    correct: bool


def load_answers(path: Path, count: int, seed: int) -> list[Answer]:
    """Model answers (GPT-3.5 and LLaMA: full sentences) with their human label, in a seeded order."""
    rows = json.loads(path.read_text())
    answers = [
        Answer(row["question"], row[model]["pred"].strip(), row[model]["human_eval"] == "1")
        for row in rows
        for model in ("gpt", "llama")
        if row.get(model, {}).get("pred", "").strip()
    ]
    random.Random(seed).shuffle(answers)
    return answers[:count]


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def full_checks(pool: DistractorPool) -> int:
    """How many of 10 checks would show 3 distinct distractors never shown before."""
    deck = DistractorDeck(pool.distractors, random.Random(0))
    full = 0
    for _ in range(10):
        drawn = deck.draw(3)
        if len({d.text for d in drawn}) == 3 and not deck.reused:
            full += 1
    return full


def measure_generation(generator: DistractorGenerator, answers: Sequence[Answer]) -> dict[str, Any]:
    for item in answers[:WARMUP]:
        generator.generate(item.question, item.answer, WANTED, random.Random(0))
    walls, cpus, pools = [], [], []
    for index, item in enumerate(answers[WARMUP:]):
        wall, cpu = time.perf_counter(), time.process_time()
        pool = generator.generate(item.question, item.answer, WANTED, random.Random(index))
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        pools.append(pool)
    first_sources = Counter(p.distractors[0].source if p.distractors else "none" for p in pools)
    return {
        "answers": len(pools),
        "wall_ms": {
            "p50": percentile(walls, 0.5),
            "p90": percentile(walls, 0.9),
            "p99": percentile(walls, 0.99),
            "mean": statistics.fmean(walls),
        },
        "cpu_ms": {
            "p50": percentile(cpus, 0.5),
            "p90": percentile(cpus, 0.9),
            "p99": percentile(cpus, 0.99),
            "mean": statistics.fmean(cpus),
        },
        "share_3_distinct_first_check": sum(len(p.distractors) >= 3 for p in pools) / len(pools),
        "share_fresh_3_all_10_checks": sum(full_checks(p) == 10 for p in pools) / len(pools),
        "mean_checks_with_fresh_3": statistics.fmean(full_checks(p) for p in pools),
        "share_no_distractor": sum(not p.distractors for p in pools) / len(pools),
        "first_source": {k: v / len(pools) for k, v in first_sources.most_common()},
        "level": {k: v / len(pools) for k, v in sorted(Counter(p.level for p in pools).items())},
        "source_errors": sum(bool(p.errors) for p in pools),
    }


def policy(item: Answer) -> Any:
    """The scripted model: sticks to a correct answer, wavers on a wrong one (seeded per answer)."""
    from tests.scoring.consistency.upstream_ask import Answerer

    rate = 0.95 if item.correct else 0.35
    rng = random.Random(f"{item.question}|{item.answer}")
    draws = [rng.random() < rate for _ in range(50)]
    return Answerer(item.answer, lambda n: "original" if draws[n] else "other")


async def measure_calls(generator: DistractorGenerator, answers: Sequence[Answer]) -> dict[str, Any]:
    from tests.fake_upstream import FakeUpstream
    from tests.scoring.consistency.upstream_ask import upstream_ask
    from tests.servers import ServerThread

    fake = FakeUpstream(record=False)
    results: dict[str, Any] = {}
    labels: dict[str, list[str | None]] = {}
    with ServerThread(fake.app()) as server:
        async with upstream_ask(server.url) as ask:
            for mode in ("binary", "graded", "adaptive"):
                scorer = ConsistencyScorer(
                    ConsistencySettings(mode=mode, seed=0, logprobs=False), InThreads(CpuParts(distractors=generator))
                )
                calls, started = [], time.perf_counter()
                labels[mode] = []
                for index, item in enumerate(answers):
                    fake.responder = policy(item)
                    job = ScoringJob(id=str(index), model="fake", question=item.question, answer=item.answer)
                    result = await scorer.score(job, ask)
                    calls.append(result.upstream_calls)
                    labels[mode].append(result.label)
                results[mode] = {
                    "mean_calls": statistics.fmean(calls),
                    "max_calls": max(calls),
                    "seconds": time.perf_counter() - started,
                }
    agree = [a == g for a, g in zip(labels["adaptive"], labels["graded"], strict=True) if g != "unscored"]
    results["adaptive_label_agrees_with_graded"] = sum(agree) / max(1, len(agree))
    return results


def _entity_types(graph: KnowledgeGraph, label: str) -> set[str]:
    linked = compatible_with(graph.link([label]), "")
    return {e.types[-1].iri for e in linked[:1] if e.types}


def compare_vectors(
    paths: AssetPaths, generator: DistractorGenerator, graph: KnowledgeGraph, answers: Sequence[Answer], nlp: Any
) -> list[dict[str, Any]]:
    """Train alternatives on corpus.tok and compare what their neighbours are worth as substitutes."""
    vocabulary = read_vocabulary(paths.vocabulary)
    sentences = read_sentences(paths.corpus)
    targets = []
    for item in answers:
        levels = select_targets(nlp.make_doc(item.question), nlp(item.answer), 2025)
        targets += [t for t in (*levels.ents_1, *levels.nncds_1, *levels.vbjjs_1) if not t.numeric]
    options = {
        "CBOW, 20 epochs (built)": VectorOptions(),
        "CBOW, 10 epochs": VectorOptions(epochs=10),
        "skip-gram, 10 epochs": VectorOptions(sg=1, epochs=10),
        "skip-gram, 20 epochs": VectorOptions(sg=1, epochs=20),
    }
    rows = []
    for name, option in options.items():
        started = time.perf_counter()
        embeddings = WordEmbeddings(train_vectors(sentences, option), vocabulary)
        seconds = time.perf_counter() - started
        raw_usable = raw_total = with_three = typed_hits = typed_total = 0
        for target in targets:
            for word, _ in embeddings.nearest(target.words, 10):
                raw_total += 1
                tags = vocabulary.tags.get(word)
                raw_usable += bool(tags and tag_fits(tags, target.tag) and not near_duplicate(word, target.text))
            found = embeddings.neighbours(target.words, target.tag, 5, target.text)
            with_three += len(found) >= 3
            if target.kind == "entity" and (wanted := _entity_types(graph, target.text)):
                for word in found:
                    typed_total += 1
                    typed_hits += bool(wanted & _entity_types(graph, word))
        rows.append(
            {
                "vectors": name,
                "train_s": seconds,
                "usable_raw_top10": raw_usable / max(1, raw_total),
                "targets_with_3": with_three / max(1, len(targets)),
                "entity_same_type": typed_hits / max(1, typed_total),
                "targets": len(targets),
            }
        )
    return rows


def print_report(generation: dict[str, Any], calls: dict[str, Any], vectors: list[dict[str, Any]] | None) -> None:
    print(f"\n### Distractor generation, warm ({generation['answers']} MixedQA answers, `{COMMAND}`)\n")
    print("| | p50 | p90 | p99 | mean |\n|---|---|---|---|---|")
    for key, name in (("wall_ms", "wall ms / answer"), ("cpu_ms", "CPU ms / answer (gateway process)")):
        row = generation[key]
        print(f"| {name} | {row['p50']:.1f} | {row['p90']:.1f} | {row['p99']:.1f} | {row['mean']:.1f} |")
    print("\n| coverage | share |\n|---|---|")
    for key in ("share_3_distinct_first_check", "share_fresh_3_all_10_checks", "share_no_distractor"):
        print(f"| {key} | {generation[key]:.3f} |")
    print(f"| mean checks (of 10) with 3 fresh distractors | {generation['mean_checks_with_fresh_3']:.2f} |")
    print(
        f"\nfirst check's source: {generation['first_source']}\nAlgorithm 1 level: {generation['level']}"
        f"\nanswers with a source error: {generation['source_errors']}"
    )
    print("\n### Upstream calls per scored answer (fake upstream, scripted policy)\n")
    print("| mode | mean calls | max calls | seconds |\n|---|---|---|---|")
    for mode in ("binary", "graded", "adaptive"):
        row = calls[mode]
        print(f"| {mode} | {row['mean_calls']:.2f} | {row['max_calls']} | {row['seconds']:.1f} |")
    print(f"\nadaptive label = graded label on {calls['adaptive_label_agrees_with_graded']:.3f} of answers")
    if vectors:
        print("\n### Word vectors compared\n")
        print(
            "| vectors | train s | usable raw top-10 | targets with 3 substitutes | entity substitutes of "
            "the same type |\n|---|---|---|---|---|"
        )
        for row in vectors:
            print(
                f"| {row['vectors']} | {row['train_s']:.0f} | {row['usable_raw_top10']:.3f} | "
                f"{row['targets_with_3']:.3f} | {row['entity_same_type']:.3f} |"
            )
        print(f"\n({vectors[0]['targets']} answer targets)")


async def main_async(args: argparse.Namespace) -> None:
    settings = ScoringSettings(data_dir=args.data_dir)
    paths = asset_paths(settings)
    nlp = load_nlp(settings.consistency.spacy_model)
    embeddings = load_embeddings(settings.consistency, paths)
    answers = load_answers(args.eval, args.answers + WARMUP, seed=7)
    async with serve_oxigraph(paths.store) as endpoint:
        generator = make_generator(nlp, embeddings, endpoint, settings.consistency)
        generation = measure_generation(generator, answers)
        calls = await measure_calls(generator, answers[WARMUP : WARMUP + args.scored])
        graph = KnowledgeGraph(endpoint, PROFILES["local"])
        vectors = (
            compare_vectors(paths, generator, graph, answers[WARMUP : WARMUP + 150], nlp)
            if args.compare_vectors
            else None
        )
    print_report(generation, calls, vectors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ScoringSettings().data_dir)
    parser.add_argument("--eval", type=Path, default=MIXEDQA)
    parser.add_argument("--answers", type=int, default=300, help="answers timed for generation")
    parser.add_argument("--scored", type=int, default=100, help="answers scored per Trust_BC mode")
    parser.add_argument("--compare-vectors", action="store_true")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
