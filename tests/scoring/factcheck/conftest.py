"""A small evidence corpus of known facts, indexed into a temporary data dir."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from scoring.factcheck.assets import add_corpus, load_evidence_index
from scoring.factcheck.index import EvidenceIndex
from scoring.settings import FactCheckSettings, ScoringSettings

FACTS = [
    {
        "id": "paris",
        "title": "Paris",
        "text": "Paris is the capital and largest city of France. It lies on the river Seine.",
    },
    {
        "id": "everest",
        "title": "Mount Everest",
        "text": "Mount Everest is the highest mountain on Earth above sea level, on the China-Nepal border.",
    },
    {
        "id": "curie",
        "title": "Marie Curie",
        "text": "Marie Curie was a physicist and chemist. She shared the 1903 Nobel Prize in Physics with "
        "her husband Pierre Curie and with Henri Becquerel.",
    },
    {"id": "moon", "title": "Moon", "text": "The Moon is the only natural satellite of Earth."},
    {
        "id": "jupiter",
        "title": "Jupiter",
        "text": "Jupiter is the fifth planet from the Sun and the largest planet in the Solar System.",
    },
    {"id": "lyon", "title": "Lyon", "text": "Lyon is the third-largest city of France, on the Rhone and the Saone."},
    {"id": "nile", "title": "Nile", "text": "The Nile is a major river in northeast Africa that flows through Cairo."},
    {"id": "seine", "title": "Seine", "text": "The Seine is a river in northern France that flows through Paris."},
]


def write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    return path


@pytest.fixture
def settings(tmp_path: Path) -> ScoringSettings:
    """Settings with no packaged corpus: only what a test adds is indexed."""
    return ScoringSettings(data_dir=tmp_path / "data", factcheck=FactCheckSettings(default_corpora=[]))


@pytest.fixture
def facts_index(settings: ScoringSettings, tmp_path: Path) -> EvidenceIndex:
    add_corpus(settings, write_jsonl(tmp_path / "facts.jsonl", FACTS))
    index = load_evidence_index(settings)
    assert index is not None
    return index
