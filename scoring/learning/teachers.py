"""Whose labels teach which fit: a model's shared fit learns only from the keys the operator trusts to label.

A label is kept whoever gives it (its key may read the record), but what it
teaches is decided here, from the name of the key that gave it and the
operator's list of labellers (the master key and keys marked ``labeller``),
when a fit is made, so that taking a key off the list takes its labels out of
the next refit. Under ``feedback.scope: model`` (the default) another key's
labels teach nothing. Under ``feedback.scope: key`` a key's labels on its own
records teach a fit of its own, used for its own records only, and never for a
key whose answers a low-trust policy acts on: a key could otherwise teach its
own fit to let its blocked answers through. A label without a name (kept
before labels named their key) teaches nothing: nobody can say who gave it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..types import Feedback, TrustRecord

__all__ = ["FitKey", "Teachers"]


@dataclass(frozen=True, order=True)
class FitKey:
    """Which fit: a model group's shared one (``key`` None), or one key's own (``feedback.scope: key``)."""

    model: str
    key: str | None = None

    def __str__(self) -> str:
        return self.model if self.key is None else f"{self.model} (key {self.key})"


@dataclass(frozen=True)
class Teachers:
    """The names whose labels teach a model's shared fit, and whether other keys teach fits of their own.

    ``own_fit``: whether a key may have a fit of its own on a model group (scope ``key``, and no low-trust
    policy acting on its answers there: ``scoring.policy.own_fit_allowed``).
    """

    labellers: frozenset[str]
    own_fit: Callable[[str, str], bool] = lambda model, key: False

    def fit_taught(self, model: str | None, owner: str | None, feedback: Feedback | None) -> FitKey | None:
        """The fit a label teaches, given the labelled record's model group and owner; None: no fit."""
        if model is None or feedback is None or feedback.by is None:
            return None
        if feedback.by in self.labellers:
            return FitKey(model)
        if feedback.by == owner and self.own_fit(model, owner):
            return FitKey(model, owner)
        return None

    def teaches(self, record: TrustRecord, fit: FitKey) -> bool:
        """Whether ``record``'s current label is one ``fit`` learns from."""
        return self.fit_taught(record.model, record.owner, record.feedback) == fit

    def counts_toward_refit(self, record: TrustRecord, previous: Feedback | None) -> FitKey | None:
        """The fit whose refit a new label brings nearer: one it teaches and the record's previous label did not.

        A record counts once toward a fit's refits whatever its relabels: a relabel by a teacher of the same fit
        replaces the label, and is seen at the next refit, without bringing it nearer.
        """
        taught = self.fit_taught(record.model, record.owner, record.feedback)
        if taught is None or taught == self.fit_taught(record.model, record.owner, previous):
            return None
        return taught
