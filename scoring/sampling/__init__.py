"""``sc``: sampled-answer agreement, a consistency signal that needs no log-probabilities.

``SamplingScorer`` re-asks the request; ``similarity.agreement`` compares two answers.
"""

from .scorer import SamplingScorer
from .similarity import Agreement, agreement

__all__ = ["Agreement", "SamplingScorer", "agreement"]
