"""Substitutes for dates and numbers: plausible neighbours, not knowledge-graph entities.

"All night long came out in 1983" should be answered against other years close
enough to be believable (1980, 1986), not against "1983 in film". Each
substitute changes one token of the span: a month to another month, a weekday to
another weekday, a year by a few years (never past ``this_year`` when the
original is not), a decade by a few decades, a number word or ordinal to a
nearby one, a count to a nearby count, a larger number by a plausible factor at
the same precision. Pure functions; the caller passes the random generator.
"""

from __future__ import annotations

import random
import re

__all__ = ["is_numeric_token", "numeric_substitutes"]

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
NUMBER_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)
ORDINAL_WORDS = (
    "zeroth",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
)
YEAR_SHIFT = 15
SMALL = 20
FACTORS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.1, 1.2, 1.25, 1.3, 1.5, 1.75, 2.0, 2.5, 3.0)

_INTEGER = re.compile(r"^\d{1,3}(?:,\d{3})+$|^\d+$")
_DECIMAL = re.compile(r"^\d+\.\d+$")
_ORDINAL = re.compile(r"^(\d+)(st|nd|rd|th)$", re.IGNORECASE)
_DECADE = re.compile(r"^(\d{3})0s$")
_TOKEN = re.compile(r"\S+")


def _cased_like(word: str, template: str) -> str:
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word.lower()


def _ordinal_suffix(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _rounded(value: float, like: int) -> int:
    """Round ``value`` to the precision of ``like`` (330 -> tens, 1,200,000 -> hundred thousands)."""
    digits = len(str(like))
    significant = max(1, len(str(like).rstrip("0")))
    return int(round(value, -(digits - significant)))


def _year_shifts(year: int, this_year: int) -> list[str]:
    top = this_year if year <= this_year else year + YEAR_SHIFT
    return [str(year + d) for d in range(-YEAR_SHIFT, YEAR_SHIFT + 1) if d and 1 <= year + d <= top]


def _integer_neighbours(token: str, this_year: int) -> list[str]:
    n = int(token.replace(",", ""))
    if len(token) == 4 and 1000 <= n <= this_year + 100:
        return _year_shifts(n, this_year)
    if n <= SMALL:
        low = 0 if n == 0 else 1
        return [str(k) for k in range(max(low, n - 5), n + 6) if k != n]
    values = sorted({_rounded(n * f, n) for f in FACTORS} - {n})
    return [f"{v:,}" if "," in token else str(v) for v in values if v > 0]


def _decimal_neighbours(token: str) -> list[str]:
    places = len(token.split(".")[1])
    value = float(token)
    values = {f"{value * f:.{places}f}" for f in FACTORS} - {token}
    return sorted(v for v in values if float(v) > 0)


def _token_substitutes(token: str, this_year: int) -> list[str]:
    """Every plausible replacement for one token; empty when it is not a date or number part."""
    lowered = token.lower()
    for names in (MONTHS, WEEKDAYS):
        lower_names = [m.lower() for m in names]
        if lowered in lower_names:
            return [_cased_like(m, token) for m in names if m.lower() != lowered]
    if lowered in NUMBER_WORDS:
        i = NUMBER_WORDS.index(lowered)
        return [_cased_like(w, token) for j, w in enumerate(NUMBER_WORDS) if j != i and abs(j - i) <= 5 and j]
    if lowered in ORDINAL_WORDS:
        i = ORDINAL_WORDS.index(lowered)
        return [_cased_like(w, token) for j, w in enumerate(ORDINAL_WORDS) if j != i and abs(j - i) <= 5 and j]
    if match := _ORDINAL.match(token):
        n = int(match.group(1))
        return [f"{k}{_ordinal_suffix(k)}" for k in range(max(1, n - 5), n + 6) if k != n]
    if match := _DECADE.match(token):
        start = int(match.group(1)) * 10
        return [f"{start + 10 * d}s" for d in (-3, -2, -1, 1, 2, 3) if 0 < start + 10 * d <= this_year]
    if _INTEGER.match(token):
        return _integer_neighbours(token, this_year)
    if _DECIMAL.match(token):
        return _decimal_neighbours(token)
    return []


def is_numeric_token(token: str, this_year: int) -> bool:
    return bool(_token_substitutes(token, this_year))


def numeric_substitutes(text: str, rng: random.Random, num: int, this_year: int) -> list[str]:
    """Up to ``num`` variants of ``text``, each with one date or number token replaced."""
    variants: dict[str, None] = {}
    for match in _TOKEN.finditer(text):
        core = match.group().strip(".,;:!?()\"'")
        start = match.start() + match.group().index(core) if core else match.start()
        for replacement in _token_substitutes(core, this_year) if core else []:
            variant = text[:start] + replacement + text[start + len(core) :]
            if variant != text:
                variants[variant] = None
    pool = list(variants)
    return rng.sample(pool, min(num, len(pool)))
