"""Trust_BC's CPU work, registered with the CPU pool (``scoring.cpu_pool``), which knows nothing of it.

The part is the distractor generator, loaded once per process by
``distractor_loader``; the work is drawing an answer's distractor pool
(spaCy parsing, knowledge-graph queries, word-vector neighbours). Only data
crosses to a worker process: the question, the answer, the random
generator's state (it comes back advanced, so the checks drawn after
generation are the same wherever the pool ran it) and a ``Distractions``.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..cpu_pool import CpuWork, Part, PartLoader

if TYPE_CHECKING:  # spaCy and gensim load only where the generator is loaded
    from ..settings import ScoringSettings
    from .distractors import DistractorGenerator, DistractorPool

__all__ = ["DISTRACTORS", "Distractions", "distractor_loader", "draw_distractors"]

RngState = tuple[Any, ...]  # random.Random.getstate()

DISTRACTORS: Part[DistractorGenerator] = Part("distractors")


@dataclass(frozen=True)
class Distractions:
    """A distractor pool and the random state after drawing it: picklable, it comes back from a worker."""

    pool: DistractorPool
    rng_state: RngState


def _load(settings: ScoringSettings, endpoint: str | None) -> DistractorGenerator:
    from .runtime import load_generator

    return load_generator(settings, endpoint)


def distractor_loader(settings: ScoringSettings, endpoint: str | None) -> PartLoader:
    """Loads the generator over the built assets and the graph at ``endpoint`` (missing assets: FileNotFoundError)."""
    return functools.partial(_load, settings, endpoint)


def _draw(generator: DistractorGenerator, question: str, answer: str, num: int, rng_state: RngState) -> Distractions:
    rng = random.Random()
    rng.setstate(rng_state)
    pool = generator.generate(question, answer, num, rng)
    return Distractions(pool, rng.getstate())


async def draw_distractors(cpu: CpuWork, question: str, answer: str, num: int, rng: random.Random) -> DistractorPool:
    """The answer's distractor pool; ``rng`` advances exactly as if the generator had drawn from it here."""
    drawn = await cpu.run(
        DISTRACTORS, functools.partial(_draw, question=question, answer=answer, num=num, rng_state=rng.getstate())
    )
    rng.setstate(drawn.rng_state)
    return drawn.pool
