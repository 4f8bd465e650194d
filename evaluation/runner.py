"""Evaluate items: answer (or take the given answer), score it as the gateway would, label it.

Per item, in order, each step a component whose result is cached on its own
(see ``cache.py``), so an interrupted run resumes mid-item:

* ``answer`` (answer mode): the model group answers with the paper's
  closed-book prompt (Table 4), greedy, with token log-probabilities for the
  mean-log-probability baseline;
* ``verbal`` (answer mode): the verbalised-confidence baseline;
* ``bc`` / ``fc``: the gateway's own scorers, each run through a
  ``ScoringPipeline`` (its timeout and error containment) with an ``Ask`` on
  the cache; the scorers run one after the other, because a local upstream
  serves one request at a time and interleaving them only costs it its
  prompt cache;
* ``ov``: ``scoring.combine.combine`` of the two (no upstream call), and ``ov_default``: the gateway's
  default Trust_OV (``scoring.combine.default_trust``) of every component the item has.

The label is the dataset's where it has one for this answer (given mode),
else gold-answer matching. Component results carrying an error are not
cached, so a rerun retries them.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from scoring import (
    PAPER_VARIANTS,
    ChecksClaims,
    ComponentResult,
    SamplingParams,
    Scorer,
    ScoringJob,
    ScoringPipeline,
    ScoringSettings,
)
from scoring.combine import combine, default_trust

from .asking import CachedAsk, CallCounter, Complete, chosen_tokens, reply_text
from .cache import CallSite, EvalCache
from .datasets import EvalItem
from .matching import gold_match
from .outcome import REPLY_CHARS_KEPT, AnswerDetails, ItemOutcome
from .prompts import (
    CLOSED_BOOK_PROMPT,
    CONFIDENCE_PROMPT,
    answer_end,
    clean_answer,
    closed_book_prompt,
    confidence_prompt,
    parse_confidence,
)

__all__ = [
    "ANSWER_MAX_TOKENS",
    "Evaluator",
    "ItemFailure",
    "RunSpec",
    "answer_logprobs",
    "evaluate_items",
    "mean_logprob",
]

Mode = Literal["answer", "given"]
ANSWER_MAX_TOKENS = 64  # a one-sentence answer, as the paper's examples give
# Small models go on with the few-shot pattern after their answer; what follows these is cut anyway.
ANSWER_STOPS = ("\n\n", "\nQuestion:")
VERBAL_MAX_TOKENS = 8


@dataclass(frozen=True)
class RunSpec:
    """What one evaluation run does."""

    mode: Mode
    model: str  # the model group that answers (answer mode), is re-asked for Trust_BC and judges by default
    components: tuple[str, ...] = ("bc", "fc")
    verbal_confidence: bool = True  # answer mode only: it asks the model that answered
    answer_logprobs: bool = True  # off for upstreams that refuse `logprobs` (no mean-log-probability baseline)


@dataclass(frozen=True)
class ItemFailure:
    item_id: str
    error: str


def answer_logprobs(tokens: Sequence[tuple[str, float]], end: int) -> list[float]:
    """The log-probabilities of the tokens that start before character ``end`` of the reply (the answer's)."""
    kept, offset = [], 0
    for token, logprob in tokens:
        if offset >= end:
            break
        kept.append(logprob)
        offset += len(token)
    return kept


def mean_logprob(tokens: Sequence[tuple[str, float]], end: int) -> float | None:
    """Mean log-probability of the tokens that start before character ``end`` of the reply."""
    kept = answer_logprobs(tokens, end)
    return sum(kept) / len(kept) if kept else None


def _digest(*parts: Any) -> str:
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


@functools.cache
def _source_digest(module: str) -> str:
    """The source of the scorer's package: a result computed by other code (a fixed judge-label parser, say)
    is recomputed, from the cached replies where its requests are unchanged, instead of being reused.

    A scorer outside any package is hashed by its own file; one with no file at all by nothing.
    """
    package = sys.modules[module.rpartition(".")[0] or module]
    folders = list(getattr(package.__spec__, "submodule_search_locations", None) or [])
    files = (
        [path for folder in folders for path in Path(folder).rglob("*.py")]
        if folders
        else [Path(file) for file in [getattr(sys.modules[module], "__file__", None)] if file]
    )
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@dataclass
class Evaluator:
    """Turns one item into an ``ItemOutcome``; holds the run's collaborators and call counters."""

    spec: RunSpec
    complete: Complete
    cache: EvalCache
    scorers: Mapping[str, Scorer]
    settings: ScoringSettings
    counters: dict[str, CallCounter] = field(default_factory=dict)
    reused: int = 0  # component results read from the cache, their calls not even looked up

    async def _cached(
        self,
        item: EvalItem,
        component: str,
        model: str,
        fingerprint: str,
        produce: Callable[[CachedAsk], Awaitable[ComponentResult]],
    ) -> ComponentResult:
        site = CallSite(item.dataset, item.id, component, model)
        found = self.cache.result(site, fingerprint)
        if found is not None:
            self.reused += 1
            return found
        counter = self.counters.setdefault(component, CallCounter())
        result = await produce(CachedAsk(self.complete, self.cache, site, counter))
        if result.error is None:
            self.cache.store_result(site, fingerprint, result)
        return result

    async def _answer(self, item: EvalItem, ask: CachedAsk) -> ComponentResult:
        started = time.perf_counter()
        body: dict[str, Any] = {
            "messages": [{"role": "user", "content": closed_book_prompt(item.question)}],
            "max_tokens": ANSWER_MAX_TOKENS,
            "temperature": 0.0,
            "stop": list(ANSWER_STOPS),
        }
        if self.spec.answer_logprobs:
            body.update(logprobs=True, top_logprobs=1)
        data = await ask.completion(body)
        reply, tokens = reply_text(data), chosen_tokens(data)
        details = AnswerDetails(
            answer=clean_answer(reply),
            reply=reply[:REPLY_CHARS_KEPT],
            tokens=len(tokens or ()),
            mean_logprob=mean_logprob(tokens, answer_end(reply)) if tokens else None,
            answer_logprobs=answer_logprobs(tokens, answer_end(reply)) if tokens else None,
        )
        return ComponentResult(
            component="answer", upstream_calls=1, duration_s=time.perf_counter() - started, details=details.model_dump()
        )

    async def _verbal(self, item: EvalItem, answer: str, ask: CachedAsk) -> ComponentResult:
        started = time.perf_counter()
        reply = await ask(
            [{"role": "user", "content": confidence_prompt(item.question, answer)}],
            max_tokens=VERBAL_MAX_TOKENS,
            temperature=0.0,
        )
        return ComponentResult(
            component="verbal",
            value=parse_confidence(reply.text),
            upstream_calls=1,
            details={"reply": reply.text[:200]},
            duration_s=time.perf_counter() - started,
        )

    async def _score(self, scorer: Scorer, job: ScoringJob, ask: CachedAsk) -> ComponentResult:
        record = await ScoringPipeline([scorer], lambda model, purpose, lane: ask, self.settings).run(job)
        return record.components[scorer.name]

    def _scorer_fingerprint(self, name: str, answer: str, logprobs: list[float] | None) -> str:
        scorer = self.scorers[name]
        section = {
            "bc": self.settings.consistency,
            "fc": self.settings.factcheck,
            "lp": self.settings.logprob,
            "sc": self.settings.sc,
            "ev": self.settings.agreement,
        }[PAPER_VARIANTS.get(name, name)]
        code = _source_digest(type(scorer).__module__)
        # A claim checker's result also follows how the answer is split (scoring.claims): its settings and code.
        claims = (
            [self.settings.claims.model_dump(mode="json"), _source_digest("scoring.claims.split")]
            if isinstance(scorer, ChecksClaims) and scorer.claim_splitter is not None
            else None
        )
        return _digest(name, section.model_dump(mode="json"), answer, logprobs if name == "lp" else None, code, claims)

    def _sampling(self, item: EvalItem) -> SamplingParams:
        """How ``sc`` asks again: the answer step's own request (answer mode; greedy, so at the upstream's
        default temperature), or the bare question for a given answer."""
        if self.spec.mode != "answer":
            return SamplingParams()
        return SamplingParams(
            messages=[{"role": "user", "content": closed_book_prompt(item.question)}],
            max_tokens=ANSWER_MAX_TOKENS,
            stop=list(ANSWER_STOPS),
        )

    async def evaluate(self, item: EvalItem) -> ItemOutcome:
        model, components = self.spec.model, {}
        answered: AnswerDetails | None = None  # given mode: no answer step
        if self.spec.mode == "answer":
            fingerprint = _digest(CLOSED_BOOK_PROMPT, ANSWER_MAX_TOKENS, ANSWER_STOPS, self.spec.answer_logprobs)
            components["answer"] = await self._cached(
                item, "answer", model, fingerprint, lambda ask: self._answer(item, ask)
            )
            answered = AnswerDetails.of(components["answer"])
            answer = answered.answer if answered is not None else ""
            if self.spec.verbal_confidence:
                components["verbal"] = await self._cached(
                    item,
                    "verbal",
                    model,
                    _digest(CONFIDENCE_PROMPT, answer),
                    lambda ask: self._verbal(item, answer, ask),
                )
        else:
            answer = item.answer or ""
        logprobs = answered.answer_logprobs if answered is not None else None
        job = ScoringJob(
            id=f"{item.dataset}/{item.id}",
            model=model,
            question=item.question,
            answer=answer,
            answer_logprobs=logprobs or None,
            sampling=self._sampling(item),
        )
        for name in self.spec.components:
            scorer = self.scorers[name]
            if scorer.needs_answer_logprobs and not job.answer_logprobs:
                continue  # no log-probabilities, no lp component (as in the gateway)
            target = scorer.judge_model or model
            components[name] = await self._cached(
                item,
                name,
                target,
                self._scorer_fingerprint(name, answer, job.answer_logprobs),
                functools.partial(self._score, scorer, job),
            )
        components["ov"] = combine(components.get("bc"), components.get("fc"))
        components["ov_default"] = default_trust(components)  # the gateway's default: every component present
        if components.keys() & set(PAPER_VARIANTS):  # the paper's Trust_OV, of the paper's components
            components["ov_paper"] = combine(components.get("bc_paper"), components.get("fc_text"))
        matched = gold_match(answer, item.gold, item.question) if item.gold else None
        if item.label is not None and item.label_source is not None:
            label, source = item.label, item.label_source
        else:
            label, source = int(bool(matched)), "gold-match"
        return ItemOutcome(
            item_id=item.id,
            question_id=item.question_id,
            answerer=item.answerer or model,
            group=item.group,
            answer=answer,
            label=label,
            label_source=source,
            gold_match=matched,
            components=components,
        )


async def evaluate_items(
    evaluator: Evaluator,
    items: Sequence[EvalItem],
    *,
    concurrency: int = 1,
    on_done: Callable[[ItemOutcome | ItemFailure], None] | None = None,
) -> tuple[list[ItemOutcome], list[ItemFailure]]:
    """Evaluate ``items`` with at most ``concurrency`` in flight; outcomes in item order.

    An item whose own steps fail (the upstream refused the answer call, say)
    becomes an ``ItemFailure`` and the run goes on; nothing of it is cached
    except the replies it did get, so a rerun tries it again.
    """
    slots = asyncio.Semaphore(concurrency)

    async def one(item: EvalItem) -> ItemOutcome | ItemFailure:
        async with slots:
            try:
                done: ItemOutcome | ItemFailure = await evaluator.evaluate(item)
            except Exception as exc:  # one bad item must not sink an hours-long run
                done = ItemFailure(item.id, f"{type(exc).__name__}: {exc}"[:500])
        if on_done is not None:
            on_done(done)
        return done

    results = await asyncio.gather(*(one(item) for item in items))
    return ([r for r in results if isinstance(r, ItemOutcome)], [r for r in results if isinstance(r, ItemFailure)])
