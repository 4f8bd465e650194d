"""A key's dollar budget: ``max_budget``, and its ``budget_duration`` (``30d``, ``1h``, ``1mo``, ``daily`` ...).

The words are LiteLLM's (``litellm.litellm_core_utils.duration_parser``): a
whole number and a unit — ``m`` minutes, ``h`` hours, ``d`` days, ``w`` weeks,
``mo`` months (``s`` seconds, in whole minutes) — or ``hourly``, ``daily``,
``weekly``, ``monthly`` (``1h``, ``24h``, ``7d``, ``30d``). So are the resets:
LiteLLM's proxy resets a budget on calendar boundaries in UTC — a day at
midnight, ``7d`` on Mondays, ``30d`` (monthly) on the 1st of the month — and
so does a window here. Every other length is counted in whole lengths from
the Unix epoch (UTC), months from the epoch's first month, weeks from its first Monday.

A window is a function of the moment alone: every replica, and a gateway
after a restart, agrees on the window a key is in without storing when it
began. The spend ledger keeps spend in minute buckets at the finest
(``exporters.spend``), so a window is a whole number of minutes.

A key's budget travels on its ``Caller`` (``KeyBudget``), whoever made the key —
the config today, a key store tomorrow — so that every key is held to it by
the same check (``proxy.server.spending``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

__all__ = ["BudgetPeriod", "KeyBudget", "key_budget"]

Unit = Literal["s", "m", "h", "d", "w", "mo"]

_SECONDS: dict[str, int] = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_WORDS = {"hourly": "1h", "daily": "24h", "weekly": "7d", "monthly": "30d"}
_FORM = re.compile(r"(\d+)(mo|[smhdw])")
_EPOCH_MONDAY = 4 * 86400  # the epoch began on a Thursday: its first Monday, four days on


@dataclass(frozen=True)
class BudgetPeriod:
    """A budget's length, as ``budget_duration`` says it; ``window(at)`` is the window ``at`` falls in."""

    count: int
    unit: Unit

    @classmethod
    def parse(cls, text: str) -> BudgetPeriod:
        """The period ``text`` names; ValueError (naming the forms it takes) for anything else."""
        words = _WORDS.get(text.strip().lower(), text.strip())
        match = _FORM.fullmatch(words)
        if match is None or int(match.group(1)) < 1:
            raise ValueError(
                f"budget_duration {text!r} is not a duration: a whole number and a unit (30s, 30m, 1h, 1d, 7d, 2w, "
                "1mo), or hourly, daily, weekly, monthly"
            )
        period = cls(int(match.group(1)), match.group(2))  # type: ignore[arg-type]  # the pattern's units
        if period.unit == "s" and period.count % 60:
            raise ValueError(f"budget_duration {text!r}: a budget window is a whole number of minutes")
        return period

    def __str__(self) -> str:
        return f"{self.count}{self.unit}"

    def window(self, at: float) -> tuple[float, float]:
        """The start and end (Unix seconds, end excluded) of the window that holds ``at``."""
        if self.unit == "mo" or (self.unit == "d" and self.count == 30):
            return _months(at, self.count if self.unit == "mo" else 1)
        length = self.count * _SECONDS[self.unit]
        origin = _EPOCH_MONDAY if self.unit == "w" or (self.unit == "d" and self.count == 7) else 0
        start = origin + (at - origin) // length * length
        return start, start + length


def _months(at: float, count: int) -> tuple[float, float]:
    """Calendar months in UTC, ``count`` at a time from the epoch's first month."""
    moment = datetime.fromtimestamp(at, UTC)
    index = (moment.year - 1970) * 12 + moment.month - 1
    first = index - index % count

    def start_of(month_index: int) -> float:
        year, month = divmod(month_index, 12)
        return datetime(1970 + year, month + 1, 1, tzinfo=UTC).timestamp()

    return start_of(first), start_of(first + count)


@dataclass(frozen=True)
class KeyBudget:
    """US dollars a key's answers may cost per budget window (``period`` None: one window, never reset)."""

    max_usd: float
    period: BudgetPeriod | None = None

    def window_start(self, at: float) -> float:
        """When the window that holds ``at`` began (0: the budget never resets; the ledger counts what it keeps)."""
        return self.period.window(at)[0] if self.period is not None else 0.0


def key_budget(max_budget: float | None, budget_duration: str | None) -> KeyBudget | None:
    """A key's budget from LiteLLM's two fields, as a configured key and a key made at run time both give them;
    None without ``max_budget``. ValueError for a ``budget_duration`` that is not one."""
    if max_budget is None:
        return None
    return KeyBudget(max_budget, BudgetPeriod.parse(budget_duration) if budget_duration is not None else None)
