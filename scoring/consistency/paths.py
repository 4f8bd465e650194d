"""Where the consistency assets live under the scoring data directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..settings import ScoringSettings

__all__ = ["AssetPaths", "asset_paths"]


@dataclass(frozen=True)
class AssetPaths:
    root: Path

    @property
    def graph(self) -> Path:
        return self.root / "graph.nt"

    @property
    def store(self) -> Path:
        return self.root / "oxigraph"

    @property
    def vectors(self) -> Path:
        return self.root / "vectors.bin"

    @property
    def vocabulary(self) -> Path:
        return self.root / "vocabulary.tsv"

    @property
    def corpus(self) -> Path:
        return self.root / "corpus.tok"

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"


def asset_paths(settings: ScoringSettings) -> AssetPaths:
    return AssetPaths(Path(settings.data_dir) / "consistency")
