"""Where ``make assets`` builds the scoring assets (knowledge graph, word vectors, evidence index)."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "var" / "trustgate"


def assets_built() -> bool:
    """Whether the evidence index and the word vectors are there (the graph is built before them)."""
    return (DATA_DIR / "factcheck" / "index").exists() and (DATA_DIR / "consistency" / "vectors.bin").exists()
