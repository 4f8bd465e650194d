"""The ``lp`` component: how sure the model was of its own answer's tokens, at no extra upstream call."""

from .scorer import LogprobScorer, logprob_component

__all__ = ["LogprobScorer", "logprob_component"]
