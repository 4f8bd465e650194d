"""Fixtures: the claim parser (spaCy with its dependency parser) and the local model's captured answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoring.claims.cpu_part import ClaimParser, claim_parser_loader
from scoring.settings import ConsistencySettings

ANSWERS = Path(__file__).with_name("fixtures") / "smollm2_answers.json"


@pytest.fixture(scope="session")
def parser() -> ClaimParser:
    loaded = claim_parser_loader(ConsistencySettings().spacy_model)()
    assert isinstance(loaded, ClaimParser)
    return loaded


@pytest.fixture(scope="session")
def local_answers() -> dict[str, str]:
    """The local model's answer to each captured prompt (``capture_answers.py``), by prompt."""
    captured = json.loads(ANSWERS.read_text(encoding="utf-8"))
    return {entry["prompt"]: entry["answer"] for entry in captured["answers"]}
