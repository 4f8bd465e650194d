"""Run the production ``run_worker`` as its own process with a test scorer (tests of scale-out).

    python -m tests.redis_worker CONFIG --delay 0.5 [--metrics-port P] [--grace 30]

The scorer re-asks the upstream once, like the real ones, and records which
process scored the job so tests can see how work was shared.
"""

from __future__ import annotations

import argparse
import asyncio
import os

from proxy.config.settings import load_settings
from scoring.types import Ask, ComponentResult, Scorer, ScoringJob
from trustgate.worker import run_worker


class WhoScoredScorer(Scorer):
    name = "bc"

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        await asyncio.sleep(self.delay_s)
        reply = await ask([{"role": "user", "content": f"check: {job.answer}"}])
        return ComponentResult(
            component="bc", value=0.8, upstream_calls=1, details={"worker_pid": os.getpid(), "heard": reply.text}
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--metrics-port", type=int)
    parser.add_argument("--grace", type=float, default=30.0)
    args = parser.parse_args()
    asyncio.run(
        run_worker(
            load_settings(args.config),
            scorers=[WhoScoredScorer(args.delay)],
            metrics_port=args.metrics_port,
            grace_s=args.grace,
        )
    )


if __name__ == "__main__":
    main()
