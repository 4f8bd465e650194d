"""A small lexicon and evidence passages written the way the packaged corpora write them."""

from __future__ import annotations

import pytest

from scoring.agreement.words import Lexicon
from scoring.factcheck.evidence import Evidence

# WordNet's glosses ("<lemmas>: <gloss>; <gloss>") and Wikipedia's summaries, cut to what the tests read.
PASSAGES = {
    "canberra": (
        "Canberra",
        "Canberra, Australian capital: the capital of Australia; located in southeastern Australia",
    ),
    "sydney": (
        "Sydney",
        "Sydney: the largest Australian city; state capital of New South Wales; Australia's chief port",
    ),
    "adelaide": ("Adelaide", "Adelaide: the state capital of South Australia"),
    "tasmania": (
        "Tasmania",
        "Tasmania is the most decentralised state in Australia, with the fewest residents living in its capital city.",
    ),
    "myanmar": (
        "Myanmar",
        "Myanmar is a country in Southeast Asia. The country's capital city is Naypyidaw, while its largest city is "
        "Yangon.",
    ),
    "yangon": ("Yangon", "Yangon, Rangoon: a city in southern Myanmar; the former capital of Myanmar"),
    "hamlet": (
        "Hamlet",
        "The Tragedy of Hamlet, Prince of Denmark, often shortened to Hamlet, is a tragedy written by William "
        "Shakespeare sometime between 1599 and 1601.",
    ),
    "iron": ("Iron", "Iron is a chemical element; it has symbol Fe and atomic number 26."),
    "saturn": ("Saturn", "Saturn is the sixth planet from the Sun and the second largest in the Solar System."),
    "georgia-country": ("Tbilisi", "Tbilisi, Tiflis: the capital and largest city of Georgia on the Kura river"),
    "georgia-state": ("Atlanta", "Atlanta: state capital and largest city of Georgia"),
    "ww2": ("World War II", "World War II was a global conflict. It ended in 1945 with the surrender of Japan."),
}


@pytest.fixture
def lexicon() -> Lexicon:
    """The few irregular forms, verbs and adjectives the tests' sentences need (WordNet has them all)."""
    return Lexicon(
        irregular={"wrote": "write", "written": "write"},
        verbs={"write", "paint", "direct", "end"},
        adjectives={"australian", "italian", "chemical", "southern"},
    )


def passages(*names: str) -> list[Evidence]:
    return [Evidence(f"test:{name}", *PASSAGES[name], 1.0) for name in names]
