"""The claims of one job: the answer whole when it is short, else its split (in the CPU pool)."""

from __future__ import annotations

from ..cpu_pool import CpuWork
from ..settings import ClaimSettings
from ..types import Claim, ScoringJob, SplitsClaims
from .cpu_part import CLAIM_PARSER, split_answer
from .selection import is_short, whole_answer

__all__ = ["ClaimSplitter"]


class ClaimSplitter(SplitsClaims):
    """Shared by the claim checkers of one process (``scoring.assembly``); holds no per-job state."""

    def __init__(self, cpu: CpuWork, settings: ClaimSettings) -> None:
        self._cpu = cpu
        self._settings = settings

    async def split(self, job: ScoringJob) -> list[Claim]:
        """A short answer is its one claim, with no parse at all; so is every answer where no parser loaded."""
        if is_short(job.answer, self._settings.min_words) or not self._cpu.has(CLAIM_PARSER):
            return [whole_answer(job.answer)]
        return await split_answer(self._cpu, job.question, job.answer, self._settings.max_claims)
