"""Trust_BC end to end: the scorer against the fake upstream, a real HTTP server."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from spacy.language import Language

from scoring.consistency.distractors import DistractorGenerator
from scoring.consistency.embedding import WordEmbeddings
from scoring.consistency.knowledge import KnowledgeGraph
from scoring.consistency.mcq import NONE_OF_THE_ABOVE, PROMPT_HEADER
from scoring.consistency.queries import PROFILES
from scoring.consistency.scorer import ConsistencyScorer
from scoring.consistency.substitution import SubstituteSources
from scoring.cpu_pool import CpuParts, InThreads
from scoring.settings import BC_PRESETS, ConsistencySettings
from scoring.types import ComponentResult, ScoringJob
from tests.fake_upstream import FakeUpstream

from .upstream_ask import Answerer, ClientAsk, shown_options, upstream_ask

pytestmark = pytest.mark.integration

RICHIE = ("When did all night long come out lionel richie?", "All night long came out in 1983")
FLORIDA = (
    "which state was returned to spain after the revolutionary war?",
    "Florida was returned to spain after the revolutionary war",
)


@pytest.fixture
def generator(nlp: Language, local_endpoint: str, embeddings: WordEmbeddings) -> DistractorGenerator:
    return DistractorGenerator(
        nlp, SubstituteSources(KnowledgeGraph(local_endpoint, PROFILES["local"]), embeddings, 2025)
    )


def score(
    generator: DistractorGenerator, fake: FakeUpstream, case: tuple[str, str], **settings: Any
) -> tuple[ComponentResult, ClientAsk]:
    """Scored with the paper's 10 checks unless ``settings`` names a preset (which sets its own) or a number."""
    if "preset" not in settings:
        settings = {"max_checks": 10, **settings}
    scorer = ConsistencyScorer(ConsistencySettings(seed=1, **settings), InThreads(CpuParts(distractors=generator)))

    async def run() -> tuple[ComponentResult, ClientAsk]:
        async with upstream_ask(fake.url) as ask:  # type: ignore[attr-defined]
            job = ScoringJob(id="job-1", model="fake", question=case[0], answer=case[1])
            return await scorer.score(job, ask), ask

    return asyncio.run(run())


def always(step: str) -> Any:
    return lambda n: step


def test_binary_consistent_model_scores_one_after_every_check(
    generator: DistractorGenerator, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.responder = Answerer(RICHIE[1], always("original"))
    result, ask = score(generator, fake_upstream, RICHIE, mode="binary")
    assert (result.component, result.value, result.label) == ("bc", 1.0, "consistent")
    assert result.upstream_calls == ask.calls == len(fake_upstream.requests) == 10
    checks = result.details.checks
    assert all(c.chosen == c.original and c.consistent for c in checks)
    assert len({c.original for c in checks}) > 1  # the original moves between checks
    shown = [o for c in checks for o in c.options if o not in (RICHIE[1], NONE_OF_THE_ABOVE)]
    assert len(shown) == 30 and len(set(shown)) == 30  # distractors differ across checks
    assert all(c.options[-1] == NONE_OF_THE_ABOVE and len(c.options) == 5 for c in checks)
    assert result.details.distractor_sources == result.details.distractor_sources_shown == {"numeric": 30}
    assert not result.details.fewer_than_3_distractors and not result.details.distractors_reused


def test_binary_stops_at_the_first_inconsistent_choice(
    generator: DistractorGenerator, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.responder = Answerer(RICHIE[1], lambda n: "other" if n == 2 else "original")
    result, ask = score(generator, fake_upstream, RICHIE, mode="binary")
    assert (result.value, result.label, result.upstream_calls) == (0.0, "inconsistent", 3)
    assert result.details.stop_reason == "inconsistent" and result.details.graded == pytest.approx(2 / 3)
    assert ask.most_in_flight == 1


def test_graded_counts_every_check(generator: DistractorGenerator, fake_upstream: FakeUpstream) -> None:
    fake_upstream.responder = Answerer(RICHIE[1], lambda n: "none" if n % 10 in (1, 4, 8) else "original")
    result, _ = score(generator, fake_upstream, RICHIE, mode="graded", concurrency=1)
    assert (result.value, result.label, result.upstream_calls) == (0.7, "consistent", 10)
    assert result.details.binary == 0.0 and result.details.stop_reason == "max_checks"
    assert [c.chosen for c in result.details.checks].count("E") == 3


@pytest.mark.parametrize(
    ("step", "calls", "value", "label"), [("original", 6, 1.0, "consistent"), ("other", 4, 0.0, "inconsistent")]
)
def test_adaptive_stops_once_the_label_is_settled(
    generator: DistractorGenerator, fake_upstream: FakeUpstream, step: str, calls: int, value: float, label: str
) -> None:
    fake_upstream.responder = Answerer(FLORIDA[1], always(step))
    result, ask = score(generator, fake_upstream, FLORIDA, mode="adaptive")
    assert (result.value, result.label, result.upstream_calls) == (value, label, calls)
    assert len(fake_upstream.requests) == calls and result.details.stop_reason == "posterior"
    assert 1 < ask.most_in_flight <= 4


def test_the_default_settings_stop_after_three_agreeing_checks(
    generator: DistractorGenerator, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.responder = Answerer(FLORIDA[1], always("original"))
    scorer = ConsistencyScorer(ConsistencySettings(seed=1), InThreads(CpuParts(distractors=generator)))

    async def run() -> ComponentResult:
        async with upstream_ask(fake_upstream.url) as ask:  # type: ignore[attr-defined]
            return await scorer.score(ScoringJob(id="job-1", model="fake", question=FLORIDA[0], answer=FLORIDA[1]), ask)

    result = asyncio.run(run())
    assert (result.value, result.label, result.upstream_calls, len(fake_upstream.requests)) == (1.0, "consistent", 3, 3)
    assert result.details.stop_reason == "settled"


@pytest.mark.parametrize(
    ("preset", "step", "calls", "value", "label"),
    [
        ("paper", "original", 10, 1.0, "consistent"),
        ("paper", "other", 10, 0.0, "inconsistent"),
        ("cheap", "original", 3, 1.0, "consistent"),
        ("cheap", "other", 3, 0.0, "inconsistent"),
    ],
)
def test_a_preset_asks_the_checks_it_names(
    generator: DistractorGenerator,
    fake_upstream: FakeUpstream,
    preset: str,
    step: str,
    calls: int,
    value: float,
    label: str,
) -> None:
    fake_upstream.responder = Answerer(FLORIDA[1], always(step))
    result, _ = score(generator, fake_upstream, FLORIDA, preset=preset)
    assert (result.value, result.label, result.upstream_calls, len(fake_upstream.requests)) == (
        value,
        label,
        calls,
        calls,
    )
    assert result.details.mode == BC_PRESETS[preset]["mode"]  # type: ignore[index]


@pytest.mark.parametrize(
    "form",
    [
        lambda letter, text: f"Answer: {letter}",
        lambda letter, text: f"({letter})",
        lambda letter, text: f"{letter.lower()}.",
        lambda letter, text: f"The answer is option {letter}) {text}",
        lambda letter, text: text,
    ],
)
def test_every_reply_shape_is_read(generator: DistractorGenerator, fake_upstream: FakeUpstream, form: Any) -> None:
    fake_upstream.responder = Answerer(RICHIE[1], always("original"), form)
    result, _ = score(generator, fake_upstream, RICHIE, mode="binary", max_checks=3)
    assert result.value == 1.0 and result.upstream_calls == 3


def test_junk_replies_are_inconsistent(generator: DistractorGenerator, fake_upstream: FakeUpstream) -> None:
    fake_upstream.responder = Answerer(RICHIE[1], always("I am not sure, maybe both?"))
    result, _ = score(generator, fake_upstream, RICHIE, mode="binary")
    assert (result.value, result.upstream_calls) == (0.0, 1)
    assert result.details.checks[0].chosen is None
    assert result.details.checks[0].reply == "I am not sure, maybe both?"


def test_the_prompt_is_the_papers_and_asks_for_the_letters_logprobs(
    generator: DistractorGenerator, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.responder = Answerer(RICHIE[1], always("original"))
    result, _ = score(generator, fake_upstream, RICHIE, mode="binary", max_checks=2)
    body = fake_upstream.requests[0]
    [message] = body["messages"]
    assert message["role"] == "user" and message["content"].startswith(PROMPT_HEADER)
    assert message["content"].endswith("E) None of the above.\nAnswer:")
    assert (body["logprobs"], body["top_logprobs"], body["temperature"], body["max_tokens"]) == (True, 5, 0.0, 16)
    assert result.details.logprob == pytest.approx(1.0)  # the fake gives the chosen token all the mass
    assert all(c.original_probability == pytest.approx(1.0) for c in result.details.checks)


def test_without_logprobs_there_is_no_logprob_score(
    generator: DistractorGenerator, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.responder = Answerer(RICHIE[1], always("original"))
    result, _ = score(generator, fake_upstream, RICHIE, mode="binary", max_checks=2, logprobs=False)
    assert "logprobs" not in fake_upstream.requests[0] and result.details.logprob is None


def test_concurrency_is_capped(generator: DistractorGenerator, fake_upstream: FakeUpstream) -> None:
    fake_upstream.delay_ms = 30
    fake_upstream.responder = Answerer(RICHIE[1], always("original"))
    result, ask = score(generator, fake_upstream, RICHIE, mode="graded", concurrency=3)
    assert result.upstream_calls == 10 and ask.most_in_flight == 3


def test_no_distractors_means_no_score_and_no_calls(
    generator: DistractorGenerator, fake_upstream: FakeUpstream
) -> None:
    result, ask = score(generator, fake_upstream, ("Is it?", "Yes."))
    assert (result.value, result.label, result.upstream_calls, ask.calls) == (None, "unscored", 0, 0)
    assert result.details.reason == "no_distractors" and result.error is None


def test_few_distractors_are_shown_as_they_are_and_recorded(
    generator: DistractorGenerator, fake_upstream: FakeUpstream
) -> None:
    case = ("who sings i just want to use your love tonight?", "The Outfield sings it.")
    fake_upstream.responder = Answerer(case[1], always("original"))
    result, _ = score(generator, fake_upstream, case, mode="binary", max_checks=3)
    assert result.value == 1.0 and result.details.distractors_reused
    assert result.details.distractor_sources.get("embedding", 0) > 0


def test_an_upstream_failure_is_reported_not_raised(
    generator: DistractorGenerator, fake_upstream: FakeUpstream
) -> None:
    case = ("When did it come out? [fail:503]", "It came out in 1983")
    result, _ = score(generator, fake_upstream, case, mode="binary")
    assert result.value is None and result.error is not None and result.error.startswith("upstream:")
    assert result.upstream_calls == 1 and result.details.stop_reason == "error"
    assert [f.reason for f in result.failures] == ["upstream"]  # for the log and trustgate_scorer_errors_total
    assert "UpstreamFailure" not in result.error  # the record names the upstream's own error, not the wrapper


class ContentAnswerer:
    """A scripted model whose choice depends on the options a check shows, not on the order concurrent
    checks arrive in (which varies from run to run)."""

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        step = random.Random(str(shown_options(messages))).choice(["original", "other"])
        return Answerer(self.answer, lambda n: step)(messages)


def test_a_seed_makes_scoring_repeatable(generator: DistractorGenerator, fake_upstream: FakeUpstream) -> None:
    runs = []
    for _ in range(2):
        fake_upstream.responder = ContentAnswerer(FLORIDA[1])
        runs.append(score(generator, fake_upstream, FLORIDA, mode="graded")[0].details.checks)
    assert runs[0] == runs[1]


class OneDistractor:
    """A generator stand-in whose pool holds a single distractor."""

    def generate(self, question: str, answer: str, num: int, rng: random.Random) -> Any:
        from scoring.consistency.distractors import Distractor, DistractorPool

        return DistractorPool(answer, [Distractor(answer.replace("1983", "1999"), "1983", "1999", "numeric")], 1)


def test_with_too_few_distractors_the_checks_show_fewer_options(fake_upstream: FakeUpstream) -> None:
    fake_upstream.responder = Answerer(RICHIE[1], always("original"))
    scorer = ConsistencyScorer(
        ConsistencySettings(seed=1, mode="binary", max_checks=3), InThreads(CpuParts(distractors=OneDistractor()))
    )  # type: ignore[arg-type]

    async def run() -> ComponentResult:
        async with upstream_ask(fake_upstream.url) as ask:  # type: ignore[attr-defined]
            return await scorer.score(ScoringJob(id="j", model="fake", question=RICHIE[0], answer=RICHIE[1]), ask)

    result = asyncio.run(run())
    assert result.value == 1.0 and result.details.fewer_than_3_distractors
    assert all(len(c.options) == 3 for c in result.details.checks)


def test_debiased_gives_a_model_that_always_answers_c_no_information(
    generator: DistractorGenerator, fake_upstream: FakeUpstream
) -> None:
    """The letter habit measured on the local model (SmolLM2 chose "C" wherever the original sat) is not consistency."""
    fake_upstream.responder = always("C")
    result, ask = score(generator, fake_upstream, RICHIE, procedure="debiased", max_checks=8, concurrency=3)
    originals = [c.original for c in result.details.checks]
    assert sorted(originals) == sorted("ABCD" * 2)  # the original visits every position equally often
    assert result.upstream_calls == ask.calls == 8 and result.details.stop_reason == "planned_checks"
    assert result.details.graded == pytest.approx(0.25)  # the paper's score: the habit hits C a quarter of the time
    assert result.value == pytest.approx(0.5) and result.label == "uncertain"
    assert result.details.letter_prior["C"] == pytest.approx(1.0) and result.details.kappa == pytest.approx(0.0)


def test_debiased_without_logprobs_reads_the_chosen_letters(
    generator: DistractorGenerator, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.responder = always("C")
    result, _ = score(generator, fake_upstream, RICHIE, procedure="debiased", max_checks=4, logprobs=False)
    assert result.details.letter_probabilities_used is False
    assert result.value == pytest.approx(0.5) and result.label == "uncertain"


def test_debiased_scores_a_model_that_finds_its_answer_anywhere_as_consistent(
    generator: DistractorGenerator, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.responder = Answerer(RICHIE[1], always("original"))
    result, _ = score(generator, fake_upstream, RICHIE, procedure="debiased", max_checks=10)
    assert result.upstream_calls == 8  # the largest whole number of rounds of the 4 positions within 10
    assert result.value == pytest.approx(1.0) and result.label == "consistent"


def test_debiased_scores_a_model_that_avoids_its_answer_below_no_information(
    generator: DistractorGenerator, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.responder = Answerer(RICHIE[1], lambda n: "other" if n % 2 else "none")
    result, _ = score(generator, fake_upstream, RICHIE, procedure="debiased", max_checks=4, concurrency=1)
    assert result.value is not None and result.value < 0.4 and result.label == "inconsistent"


@pytest.mark.parametrize(
    ("step", "settings", "told_after", "calls"),
    [
        (always("original"), {}, None, 3),  # ends clearly consistent on its first 3 checks: nothing to tell
        (lambda n: "other" if n == 2 else "original", {}, 3, 4),  # a split after 3: told before the fourth
        (lambda n: "other" if n == 1 else "original", {"concurrency": 1}, 2, 4),  # told at the first other choice
        (always("original"), {"max_checks": 10}, 0, 6),  # its first wave asks 4 checks: told before any
        (always("other"), {}, None, 3),  # ends on 3 inconsistent checks: its result says it
    ],
    ids=["consistent", "split", "early-other", "more-checks", "inconsistent"],
)
def test_trust_bc_tells_once_when_it_will_not_end_clearly_consistent(
    generator: DistractorGenerator,
    fake_upstream: FakeUpstream,
    step: Any,
    settings: dict[str, Any],
    told_after: int | None,
    calls: int,
) -> None:
    """``sc`` waits on this to start (scoring.types.TellsEarly) instead of on Trust_BC's last check."""
    fake_upstream.responder = Answerer(FLORIDA[1], step)
    scorer = ConsistencyScorer(ConsistencySettings(seed=1, **settings), InThreads(CpuParts(distractors=generator)))
    told: list[int] = []

    async def run() -> ComponentResult:
        async with upstream_ask(fake_upstream.url) as ask:  # type: ignore[attr-defined]
            job = ScoringJob(id="job-1", model="fake", question=FLORIDA[0], answer=FLORIDA[1])
            return await scorer.score_telling(job, ask, lambda: told.append(len(fake_upstream.requests)))

    result = asyncio.run(run())
    assert told == ([] if told_after is None else [told_after]) and result.upstream_calls == calls
    assert result.details.clearly_consistent() == (told_after is None and result.value == 1.0)
