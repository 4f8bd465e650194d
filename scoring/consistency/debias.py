"""Agreement beyond the model's letter habit: the debiased Trust_BC score. Pure functions.

Small models pick some letters whatever the options say (SmolLM2-135M chose
"C" in most checks wherever the original sat), so the share of checks that
chose the original measures the habit as much as the consistency. The
debiased procedure therefore (1) shows the original at each letter position
equally often (``balanced_positions``), and (2) scores how much more the model
chose the original's letter than its own prior over letters predicts.

The prior is estimated from the checks themselves, as in permutation-based
prior estimation: because the original visits every position equally, the
content's pull averages out over the checks and what remains of the mean
letter distribution is the model's preference for letters. Each check's
distribution is the normalised probability of each letter where the model
wrote it (from ``top_logprobs``) when the upstream returns log-probabilities,
else one-hot on the letter it chose (uniform when no letter could be read).

The score compares how often the model chose the original's letter with how
often its prior alone would have (chance agreement, as in Cohen's kappa)::

    observed = mean_k p_k(original_k)        expected = mean_k prior(original_k)
    value    = 0.5 + 0.5 * (observed - expected) / (1 - expected)   observed >= expected
             = 0.5 * observed / expected                            otherwise

so 0.5 means "no information": a model that always answers the same letter
(or always "None of the above") has ``observed == expected`` and scores 0.5
exactly, which the default thresholds (0.4 / 0.7) label "uncertain". A model
that always finds the original scores 1, one that never does 0; ``kappa`` is
kept in the details for readers who know it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Agreement", "agreement_beyond_prior", "balanced_positions", "letter_distribution"]


def balanced_positions(positions: int, checks: int, rng: random.Random) -> list[int]:
    """Each of ``positions`` positions once per round of ``positions`` checks, rounds shuffled by ``rng``."""
    order: list[int] = []
    while len(order) < checks:
        order += rng.sample(range(positions), positions)
    return order[:checks]


def letter_distribution(letters: str, chosen: str | None, probabilities: dict[str, float] | None) -> dict[str, float]:
    """One check's distribution over ``letters``: the letter probabilities, else the chosen letter, else uniform."""
    if probabilities is not None:
        return {letter: probabilities.get(letter, 0.0) for letter in letters}
    if chosen is not None and chosen in letters:
        return {letter: float(letter == chosen) for letter in letters}
    return dict.fromkeys(letters, 1.0 / len(letters))


@dataclass(frozen=True)
class Agreement:
    observed: float  # mean probability the model gave the original's letter
    expected: float  # mean prior probability of the original's letter (chance agreement)
    kappa: float
    value: float  # in [0, 1]: 0 never the original, 0.5 no information (chance), 1 always the original
    prior: dict[str, float]  # the estimated letter prior


def agreement_beyond_prior(distributions: Sequence[dict[str, float]], originals: Sequence[str]) -> Agreement | None:
    """Kappa of the checks' choices against the original, chance from the letter prior; None without checks.

    Checks may show different numbers of options (fewer distractors); the prior
    is taken over every letter any check showed, missing letters counting 0.
    """
    if not distributions:
        return None
    letters = sorted({letter for d in distributions for letter in d})
    prior = {letter: sum(d.get(letter, 0.0) for d in distributions) / len(distributions) for letter in letters}
    observed = sum(d.get(o, 0.0) for d, o in zip(distributions, originals, strict=True)) / len(distributions)
    expected = sum(prior[o] for o in originals) / len(originals)
    kappa = 0.0 if expected >= 1.0 else (observed - expected) / (1.0 - expected)
    value = 0.5 + 0.5 * kappa if observed >= expected else 0.5 * observed / expected
    return Agreement(observed=observed, expected=expected, kappa=kappa, value=min(1.0, max(0.0, value)), prior=prior)
