"""Where ``make assets`` builds the scoring assets (knowledge graph, word vectors, evidence index)."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "var" / "trustgate"
