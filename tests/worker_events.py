"""A ``WorkerEvents`` that remembers what it was told, for tests of the queue's consumers."""

from __future__ import annotations


class RecordedEvents:
    """A WorkerEvents that remembers what it was told."""

    def __init__(self) -> None:
        self.dead: list[str] = []
        self.reclaimed = 0
        self.outcomes: list[str] = []
        self.in_flight = 0
        self.overtaken = 0

    def job_started(self) -> None:
        self.in_flight += 1

    def job_finished(self, outcome: str, seconds: float) -> None:
        self.in_flight -= 1
        self.outcomes.append(outcome)

    def jobs_reclaimed(self, count: int) -> None:
        self.reclaimed += count

    def dead_lettered(self, model: str) -> None:
        self.dead.append(model)

    def async_overtaken(self, count: int) -> None:
        self.overtaken += count
