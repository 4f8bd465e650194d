"""Trust_BC's checks are a fixed function of (seed, question, answer): not of the job, the process or the endpoint.

The gateway (a record's uuid), a worker and ``trustgate eval`` (dataset/item
ids) score the same answer under different job ids, in different processes,
each against its own Oxigraph server; all must show the model the same checks.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from spacy.language import Language

from scoring.consistency.distractors import DistractorGenerator
from scoring.consistency.embedding import WordEmbeddings
from scoring.consistency.knowledge import KnowledgeGraph
from scoring.consistency.oxigraph import oxigraph_load
from scoring.consistency.queries import PROFILES
from scoring.consistency.scorer import ConsistencyScorer, check_rngs
from scoring.consistency.substitution import SubstituteSources
from scoring.cpu_pool import CpuParts, InThreads
from scoring.settings import ConsistencySettings
from scoring.types import BCCheck, ScoringJob

from .checks_in_child import by_content
from .fixtures import write_test_graph

REPO = Path(__file__).resolve().parents[3]
CASES = [
    ("Who built the first temple for god in jerusalem?", "King Solomon built the first temple for god in jerusalem"),
    ("When did all night long come out lionel richie?", "All night long came out in 1983"),
    (
        "which state was returned to spain after the revolutionary war?",
        "Florida was returned to spain after the revolutionary war",
    ),
    (
        "who sings i just want to use your love tonight?",
        "English rock band the Outfield sings i just want to use your love tonight.",
    ),
    ("who built the temple?", "The priests erected the temple."),
]


@pytest.fixture
def generator(nlp: Language, local_endpoint: str, embeddings: WordEmbeddings) -> DistractorGenerator:
    return DistractorGenerator(
        nlp, SubstituteSources(KnowledgeGraph(local_endpoint, PROFILES["local"]), embeddings, 2025)
    )


def draws(seed: int, question: str, answer: str) -> list[list[float]]:
    return [[rng.random() for _ in range(3)] for rng in check_rngs(seed, question, answer)]


@pytest.mark.unit
def test_the_generators_are_seeded_by_seed_question_and_answer_alone() -> None:
    assert draws(0, "q", "a") == draws(0, "q", "a")
    keys = [(0, "q", "a"), (1, "q", "a"), (0, "q?", "a"), (0, "q", "a."), (0, "q a", ""), (0, "q", " a")]
    assert len({str(draws(*key)) for key in keys}) == len(keys)
    pool, checks = draws(0, "q", "a")
    assert pool != checks  # the pool's generator is not the checks'


@pytest.mark.integration
def test_a_rescored_answer_gets_the_same_checks_under_any_job_id(generator: DistractorGenerator) -> None:
    def score(job_id: str, **settings: Any) -> tuple[float | None, list[BCCheck]]:
        scorer = ConsistencyScorer(
            ConsistencySettings(mode="graded", max_checks=6, **settings), InThreads(CpuParts(distractors=generator))
        )
        question, answer = CASES[2]
        result = asyncio.run(
            scorer.score(ScoringJob(id=job_id, model="m", question=question, answer=answer), by_content)
        )
        return result.value, result.details.checks

    gateway = score("0b9e1c9e-5f0e-4f43-9d55-1b8c4c0d2a11")  # the default seed: reproducible out of the box
    assert len(gateway[1]) >= 2
    assert score("mixedqa/17") == gateway == score("mixedqa/17", seed=0)
    assert score("mixedqa/17", seed=1)[1] != gateway[1]  # another seed: other checks, as fixed
    assert score("x", seed=1) == score("y", seed=1)


def checks_in_child(store: Path, hash_seed: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.scoring.consistency.checks_in_child", str(store), orjson.dumps(CASES).decode()],
        cwd=REPO,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: list[dict[str, Any]] = orjson.loads(done.stdout)
    return found


@pytest.mark.integration
def test_processes_with_different_hash_seeds_build_the_same_checks(tmp_path: Path) -> None:
    """String hashing is salted per process (sets of strings iterate differently), and each process
    serves the graph from its own Oxigraph server: neither may change a check."""
    write_test_graph(tmp_path / "graph.nt")
    oxigraph_load(tmp_path / "store", tmp_path / "graph.nt")
    first, second = checks_in_child(tmp_path / "store", "1"), checks_in_child(tmp_path / "store", "2")
    assert first == second
    assert len(first) == len(CASES)
    for case, (_, answer) in zip(first, CASES, strict=True):
        assert case["value"] is not None and len(case["checks"]) >= 2
        assert all(answer in options for options, _, _ in case["checks"])
