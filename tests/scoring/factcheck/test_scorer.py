"""The full fact check, with the fake upstream acting as the judge over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from proxy import settings_from_dict
from proxy.trust.ask import reply_from_completion
from proxy.upstream.client import UpstreamClient
from scoring.cpu_pool import CpuParts, InThreads
from scoring.factcheck.index import EvidenceIndex
from scoring.factcheck.judge import judge_prompt
from scoring.factcheck.scorer import FactCheckScorer
from scoring.factcheck.text import evidence_query, tokenize
from scoring.settings import FactCheckSettings
from scoring.types import ComponentResult, Reply, ScoringJob
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream, last_user_text


class JudgeAsk:
    """A thin ``Ask``: one non-streamed completion from the model group, as the gateway's scorers make."""

    def __init__(self, upstream: UpstreamClient, group: str) -> None:
        self._upstream = upstream
        self._group = group

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int = 16,
        temperature: float = 0.0,
        logprobs: bool = False,
        top_logprobs: int | None = None,
    ) -> Reply:
        body: dict[str, Any] = {"messages": messages, "max_tokens": max_tokens, "temperature": temperature}
        if logprobs:
            body.update(logprobs=True, top_logprobs=top_logprobs)
        return reply_from_completion((await self._upstream.complete(self._group, body)).data)


def fact_check(
    fake: FakeUpstream, index: EvidenceIndex, question: str, answer: str, settings: FactCheckSettings | None = None
) -> ComponentResult:
    async def scenario() -> ComponentResult:
        async with (
            httpx.AsyncClient() as http,
            contextlib.aclosing(UpstreamClient(settings_from_dict(gateway_config(fake.url)), http)) as upstream,
        ):  # type: ignore[attr-defined]
            scorer = FactCheckScorer(InThreads(CpuParts(evidence=index)), settings or FactCheckSettings())
            job = ScoringJob(id="job-1", model="fake", question=question, answer=answer)
            return await scorer.score(job, JudgeAsk(upstream, "fake"))

    return asyncio.run(scenario())


def judge_saying(reply: str, seen: list[str]) -> Callable[[list[dict[str, Any]]], str]:
    def respond(messages: list[dict[str, Any]]) -> str:
        seen.append(last_user_text(messages))
        return reply

    return respond


@pytest.mark.integration
def test_supported_answer(fake_upstream: FakeUpstream, facts_index: EvidenceIndex) -> None:
    prompts: list[str] = []
    fake_upstream.responder = judge_saying("Support", prompts)
    question, answer = "What is the capital of France?", "Paris is the capital of France."
    result = fact_check(fake_upstream, facts_index, question, answer)

    assert (result.component, result.label, result.value, result.upstream_calls) == ("fc", "support", 1.0, 1)
    evidence = result.details.evidence
    assert evidence[0].id == "facts:paris" and evidence[0].title == "Paris" and evidence[0].score > 0
    assert len(evidence) <= 10
    evidence_found = facts_index.search(tokenize(evidence_query(question, answer)), 10)
    assert prompts == [judge_prompt(evidence_found, question, answer)]
    assert (result.details.label_probs, result.details.probs_from) == (
        {"support": 1.0, "contradict": 0.0, "neutral": 0.0},
        "logprobs",
    )
    assert result.details.judge_reply == "Support"
    sent = fake_upstream.requests[0]
    assert (sent["logprobs"], sent["top_logprobs"], sent["temperature"]) == (True, 5, 0.0)


@pytest.mark.integration
def test_contradicted_answer_in_a_sentence(fake_upstream: FakeUpstream, facts_index: EvidenceIndex) -> None:
    fake_upstream.responder = judge_saying("The evidence contradicts the answer.", [])
    result = fact_check(fake_upstream, facts_index, "What is the capital of France?", "Lyon is the capital.")
    assert (result.label, result.value, result.details.probs_from) == ("contradict", 0.0, "label")
    assert result.details.label_probs == {"support": 0.0, "contradict": 1.0, "neutral": 0.0}


@pytest.mark.integration
def test_a_junk_reply_is_neutral(fake_upstream: FakeUpstream, facts_index: EvidenceIndex) -> None:
    fake_upstream.responder = judge_saying("I like turtles", [])
    result = fact_check(fake_upstream, facts_index, "Which river flows through Cairo?", "The Nile.")
    assert (result.label, result.value) == ("neutral", 0.5)


@pytest.mark.integration
def test_no_evidence_is_neutral_without_asking_the_judge(
    fake_upstream: FakeUpstream, facts_index: EvidenceIndex
) -> None:
    result = fact_check(fake_upstream, facts_index, "Qui a écrit Zazie?", "Queneau.")
    assert (result.label, result.value, result.upstream_calls, result.error) == ("neutral", 0.5, 0, None)
    assert result.details.evidence == [] and fake_upstream.requests == []


@pytest.mark.integration
def test_logprobs_can_be_turned_off(fake_upstream: FakeUpstream, facts_index: EvidenceIndex) -> None:
    fake_upstream.responder = judge_saying("support", [])
    result = fact_check(
        fake_upstream,
        facts_index,
        "What is the only natural satellite of Earth?",
        "The Moon.",
        FactCheckSettings(judge_logprobs=False, top_k=2),
    )
    assert "logprobs" not in fake_upstream.requests[0]
    assert (result.value, result.details.probs_from, len(result.details.evidence)) == (1.0, "label", 2)


@pytest.mark.unit
def test_the_judge_model_is_exposed_for_the_pipeline(facts_index: EvidenceIndex) -> None:
    cpu = InThreads(CpuParts(evidence=facts_index))
    assert FactCheckScorer(cpu, FactCheckSettings(judge_model="judge")).judge_model == "judge"
    assert FactCheckScorer(cpu, FactCheckSettings()).judge_model is None


@pytest.mark.unit
def test_rerank_is_not_a_setting() -> None:
    """Re-ranking was measured (bench/retrieval.py) and gained nothing, so it was left out."""
    with pytest.raises(ValueError, match="rerank"):
        FactCheckSettings(rerank=True)  # type: ignore[call-arg]


@pytest.mark.integration
def test_the_choice_judge_reads_yes_and_probes_its_habit_once(
    fake_upstream: FakeUpstream, facts_index: EvidenceIndex
) -> None:
    prompts: list[str] = []
    fake_upstream.responder = judge_saying("Yes", prompts)
    settings = FactCheckSettings(judge_procedure="choice")

    async def scenario() -> list[ComponentResult]:
        async with (
            httpx.AsyncClient() as http,
            contextlib.aclosing(
                UpstreamClient(settings_from_dict(gateway_config(fake_upstream.url)), http)
            ) as upstream,
        ):  # type: ignore[attr-defined]
            scorer = FactCheckScorer(InThreads(CpuParts(evidence=facts_index)), settings)
            ask = JudgeAsk(upstream, "fake")
            return [
                await scorer.score(
                    ScoringJob(
                        id=f"job-{n}",
                        model="fake",
                        question="What is the capital of France?",
                        answer="Paris is the capital of France.",
                    ),
                    ask,
                )
                for n in range(2)
            ]

    first, second = asyncio.run(scenario())
    assert (first.label, first.value, first.upstream_calls, second.upstream_calls) == ("support", 1.0, 2, 1)
    assert first.details.judge == "llm-choice" and first.details.probs_from == "logprobs"
    assert sum("Evidence: N/A" in p for p in prompts) == 1  # the content-free probe, once per judging model
    assert all(p.endswith("Does the evidence support the answer? Reply yes or no.\nReply:") for p in prompts)
    assert fake_upstream.requests[0]["top_logprobs"] == 20


@pytest.mark.integration
def test_the_choice_judge_without_logprobs_reads_the_reply(
    fake_upstream: FakeUpstream, facts_index: EvidenceIndex
) -> None:
    fake_upstream.responder = judge_saying("No, Lyon is not the capital.", [])
    result = fact_check(
        fake_upstream,
        facts_index,
        "What is the capital of France?",
        "Lyon is the capital.",
        FactCheckSettings(judge_procedure="choice", judge_logprobs=False),
    )
    assert (result.label, result.value, result.upstream_calls, result.details.probs_from) == (
        "contradict",
        0.0,
        1,
        "label",
    )
