"""Inputs for scoring's CPU work: small assets on disk, and answers far longer than any check needs."""

from __future__ import annotations

from pathlib import Path

from scoring.consistency.paths import asset_paths
from scoring.factcheck.assets import add_corpus
from scoring.settings import FactCheckSettings, ScoringSettings
from tests.scoring.consistency.fixtures import WORDS, make_vectors
from tests.scoring.factcheck.conftest import FACTS, write_jsonl


def long_answer(chars: int) -> str:
    """An answer of about ``chars`` characters: real sentences for spaCy to parse, far longer than any check needs."""
    sentence = "King Solomon built the first temple for god in jerusalem in the tenth century. "
    return (sentence * (chars // len(sentence) + 1))[:chars]


def write_small_assets(data_dir: Path) -> None:
    """The fixture vectors and vocabulary where the built ones live, and the fact corpus indexed."""
    paths = asset_paths(ScoringSettings(data_dir=data_dir))
    paths.root.mkdir(parents=True)
    make_vectors().save_word2vec_format(str(paths.vectors), binary=True)
    paths.vocabulary.write_text("".join(f"{word}\t{','.join(spec[3])}\t{spec[4]}\n" for word, spec in WORDS.items()))
    settings = ScoringSettings(data_dir=data_dir, factcheck=FactCheckSettings(default_corpora=[]))
    add_corpus(settings, write_jsonl(data_dir / "facts.jsonl", FACTS))
