"""Dates and numbers get plausible neighbours, one token changed at a time."""

from __future__ import annotations

import random

import pytest

from scoring.consistency.numeric import MONTHS, YEAR_SHIFT, is_numeric_token, numeric_substitutes

pytestmark = pytest.mark.unit

THIS_YEAR = 2025


def substitutes(text: str, num: int = 100, seed: int = 0) -> list[str]:
    return numeric_substitutes(text, random.Random(seed), num, THIS_YEAR)


def test_a_year_moves_by_a_few_years_and_not_into_the_future() -> None:
    years = [int(v.rsplit(" ", 1)[1]) for v in substitutes("All night long came out in 1983")]
    assert years and 1983 not in years
    assert all(abs(y - 1983) <= YEAR_SHIFT for y in years)
    recent = [int(v) for v in substitutes("2020")]
    assert max(recent) <= THIS_YEAR


def test_a_month_becomes_another_month_and_keeps_its_case() -> None:
    variants = substitutes("It opened in March 1889.")
    months = {v.split()[3] for v in variants if v.endswith("1889.")}
    assert months == set(MONTHS) - {"March"}
    assert all(v.count("March") + sum(v.count(m) for m in MONTHS if m != "March") == 1 for v in variants)


def test_one_token_changes_per_variant() -> None:
    for variant in substitutes("March 1889"):
        month, year = variant.split()
        assert (month == "March") != (year == "1889")


def test_small_counts_and_number_words_stay_small() -> None:
    assert set(substitutes("8")) <= {str(n) for n in range(3, 14)} - {"8"}
    words = substitutes("A spider has eight legs.")
    assert words and all("eight" not in w for w in words)
    assert all(w.startswith("A spider has ") and w.endswith(" legs.") for w in words)


def test_large_numbers_keep_their_precision_and_format() -> None:
    for variant in substitutes("It is 1,200,000 km long"):
        value = variant.split()[2]
        assert "," in value and value != "1,200,000" and value.endswith(",000")
    assert all(v.endswith("0") for v in substitutes("330"))


def test_ordinals_decades_and_decimals() -> None:
    assert "the 18th century" in substitutes("the 19th century")
    assert "the second king" in substitutes("the first king")
    assert set(substitutes("the 1980s")) >= {"the 1970s", "the 1990s"}
    assert all(len(v.split(".")[1]) == 1 for v in substitutes("3.5"))


def test_words_without_numbers_get_nothing() -> None:
    assert substitutes("the revolutionary war") == []
    assert not is_numeric_token("war", THIS_YEAR)
    assert is_numeric_token("1983", THIS_YEAR)


def test_same_seed_same_variants_and_num_is_a_cap() -> None:
    assert substitutes("1983", num=5, seed=3) == substitutes("1983", num=5, seed=3)
    assert len(substitutes("1983", num=5)) == 5
