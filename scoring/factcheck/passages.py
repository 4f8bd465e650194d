"""Passages and their on-disk store: one JSON line each, fetched by row number.

The BM25 index knows rows, not text; a request needs the text of ten rows.
Keeping the passages in a memory-mapped JSON-lines file with a row-offset
array makes that ten slices and ten small parses, without holding a million
passages as Python objects.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

__all__ = ["Passage", "PassageStore", "PassageWriter"]

PASSAGES_FILE = "passages.jsonl"
OFFSETS_FILE = "offsets.npy"


@dataclass(frozen=True, slots=True)
class Passage:
    """A unit of evidence: a stable id (``source:document[#part]``), a title and ~100 words."""

    id: str
    title: str
    text: str


class PassageWriter:
    """Append passages to ``directory``; the row offsets are saved on close."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._file = (directory / PASSAGES_FILE).open("wb")
        self._offsets = [0]

    def add(self, passage: Passage) -> None:
        line = orjson.dumps({"id": passage.id, "title": passage.title, "text": passage.text}) + b"\n"
        self._file.write(line)
        self._offsets.append(self._offsets[-1] + len(line))

    def close(self) -> None:
        self._file.close()
        np.save(self._directory / OFFSETS_FILE, np.asarray(self._offsets, dtype=np.int64))

    def __enter__(self) -> PassageWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class PassageStore:
    """Read-only random access to the passages written by ``write_passages``."""

    def __init__(self, directory: Path) -> None:
        self._offsets = np.load(directory / OFFSETS_FILE)
        with (directory / PASSAGES_FILE).open("rb") as file:
            size = file.seek(0, 2)
            self._data = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if size else b""

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, row: int) -> Passage:
        start, end = int(self._offsets[row]), int(self._offsets[row + 1])
        return Passage(**orjson.loads(self._data[start:end]))
