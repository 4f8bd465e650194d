"""The learner's input and its rule: light types, so the gateway holds them without loading scikit-learn."""

from __future__ import annotations

from dataclasses import dataclass

from .features import FeatureVector

__all__ = ["LabelledAnswer", "LearningRule"]


@dataclass(frozen=True)
class LabelledAnswer:
    """One labelled answer as the learner sees it."""

    features: FeatureVector
    correct: bool
    default: float | None  # the default Trust_OV of the same components (None: it gave none)
    labelled_at: float | None = None  # when its label arrived: which fits have seen it (the refit guard)


@dataclass(frozen=True)
class LearningRule:
    """How a fit is made and when it is used (``trustgate.scoring.feedback``)."""

    min_labels: int = 50
    folds: int = 5
    max_features: int = 4
    min_gain: float = 0.005  # cross-validated AUROC a further feature must add
    presence: float = 0.9  # a feature is a candidate when this share of the labelled answers has it
    c: float = 1.0  # inverse L2 strength, on standardised features
    seed: int = 0
    # The refit guard (scoring.learning.guard): a new fit ranking the labelled answers both have seen with a rank
    # correlation below this against the combination in use is held for the operator.
    min_agreement: float = -0.25
