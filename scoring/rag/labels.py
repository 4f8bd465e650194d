"""What a RAG request may say about its own right answer, and where a job carries it.

Both are optional extension fields of the request: ``answerable`` (do the
documents hold the answer?) and ``reference_claims`` (claims a correct answer
makes). They turn refusal groundedness and claim correctness on; without them
those metrics are None. A ``ScoringJob`` has no field for them, so they ride
in ``job.policy[LABELS_KEY]``, which the queue and the Redis stream already
carry as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..types import ScoringJob

__all__ = ["LABELS_KEY", "RagLabels", "labels_from_job"]

LABELS_KEY = "rag"


@dataclass(frozen=True, slots=True)
class RagLabels:
    answerable: bool | None = None
    reference_claims: tuple[str, ...] = ()

    def as_policy(self) -> dict[str, Any]:
        """The JSON stored at ``job.policy[LABELS_KEY]``."""
        return {"answerable": self.answerable, "reference_claims": list(self.reference_claims)}

    @classmethod
    def from_policy(cls, value: Any) -> RagLabels:
        """Leniently back from ``as_policy``: anything malformed reads as "not given"."""
        if not isinstance(value, dict):
            return cls()
        answerable = value.get("answerable")
        claims = value.get("reference_claims")
        return cls(answerable if isinstance(answerable, bool) else None,
                   tuple(c for c in claims if isinstance(c, str) and c.strip()) if isinstance(claims, list) else ())


def labels_from_job(job: ScoringJob) -> RagLabels:
    return RagLabels.from_policy(job.policy.get(LABELS_KEY))
