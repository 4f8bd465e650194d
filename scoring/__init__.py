"""Scoring: trust scores for answers (consistency, fact check, combination) and their queue.

Its public names, below, are what the gateway, the exporters and the applications on top use: import them
from ``scoring``, not from its modules. The exporters use only the record and its typed details, the one way
every writer of traffic data creates its files and the one reading of a Redis failure
(``tests/test_architecture.py`` holds them to that). The scorers' asset builders and corpora
(``scoring.consistency.assets``, ``scoring.factcheck``) are left out on purpose: they load spaCy, gensim and
bm25s, which a gateway that does not score never needs, so the commands that build assets import them when
they run. Nothing in ``scoring`` imports these names from here: its modules import each other directly, so the
import graph has no cycle.
"""

from .assembly import (
    PAPER_VARIANTS,
    ScorerAssetsError,
    combiner_for,
    default_combination,
    open_scorers,
    scoring_configured,
)
from .calibration import (
    CalibrationError,
    Calibrator,
    IsotonicCalibrator,
    LogisticCombination,
    PlattCalibrator,
    fitted_components,
    load_calibration,
    save_calibration,
)
from .children import die_with_parent, forget_child, reap_stale_children, register_child
from .failures import describe
from .jobs import scoring_job
from .lanes import Lane, SyncFirstQueue, lane_of
from .learning.features import features_of
from .learning.guard import HeldFitMismatch, accept_held
from .learning.refit import LabelSource, RefitOutcome, Refitter
from .learning.report import CalibrationReport, Combination, HeldFit, LearnedFit, ScoreQuality
from .learning.rule import LearningRule
from .learning.store import FitStore, RedisFitStore, SqliteFitStore
from .learning.teachers import FitKey, Teachers
from .pipeline import COMBINED, ScoringPipeline
from .policy import (
    Decision,
    LowTrust,
    Outcome,
    decide,
    is_low_trust,
    is_unscored,
    low_trust,
    outcome,
    own_fit_allowed,
    resolved_mode,
    scoring_reachable,
    skip_reason,
    trust_value,
)
from .private_files import private_file
from .queue import JobQueue, MemoryJobQueue, Process, SubmitResult, key_cap
from .rag import InvalidRagField, RagRequest, RagScorer, build_rag_scorer, prepare_rag_request, rag_report
from .redis_queue import RedisJobQueue, RedisStreamWorker
from .redis_reachable import redis_reachable
from .settings import BudgetLimits, BudgetSettings, FeedbackScope, Renamed, ScoringMode, ScoringSettings, require_order
from .throttled_log import ThrottledLog
from .types import (
    FEEDBACK_STATUSES,
    MAX_FEEDBACK_COMMENT,
    BCCheck,
    BCDetails,
    BudgetSpent,
    ChecksClaims,
    ClaimResult,
    ComponentResult,
    EVDetails,
    EVStatement,
    FCDetails,
    Feedback,
    FeedbackRefused,
    JobPolicy,
    Labelled,
    LPDetails,
    OVDetails,
    RAGClaim,
    RAGDetails,
    RagLabels,
    RAGStatement,
    RecordScope,
    Reply,
    SamplingParams,
    Scorer,
    ScoringJob,
    ShedReason,
    StoreUnavailable,
    TrustAction,
    TrustRecord,
    TrustStatus,
    UnreadableReply,
    UpstreamFailure,
)

__all__ = [
    "COMBINED",
    "FEEDBACK_STATUSES",
    "MAX_FEEDBACK_COMMENT",
    "PAPER_VARIANTS",
    "BCCheck",
    "BCDetails",
    "BudgetLimits",
    "BudgetSettings",
    "BudgetSpent",
    "CalibrationError",
    "CalibrationReport",
    "Calibrator",
    "ChecksClaims",
    "ClaimResult",
    "Combination",
    "ComponentResult",
    "Decision",
    "EVDetails",
    "EVStatement",
    "FCDetails",
    "Feedback",
    "FeedbackRefused",
    "FeedbackScope",
    "FitKey",
    "FitStore",
    "HeldFit",
    "HeldFitMismatch",
    "InvalidRagField",
    "IsotonicCalibrator",
    "JobPolicy",
    "JobQueue",
    "LPDetails",
    "LabelSource",
    "Labelled",
    "Lane",
    "LearnedFit",
    "LearningRule",
    "LogisticCombination",
    "LowTrust",
    "MemoryJobQueue",
    "OVDetails",
    "Outcome",
    "PlattCalibrator",
    "Process",
    "RAGClaim",
    "RAGDetails",
    "RAGStatement",
    "RagLabels",
    "RagRequest",
    "RagScorer",
    "RecordScope",
    "RedisFitStore",
    "RedisJobQueue",
    "RedisStreamWorker",
    "RefitOutcome",
    "Refitter",
    "Renamed",
    "Reply",
    "SamplingParams",
    "ScoreQuality",
    "Scorer",
    "ScorerAssetsError",
    "ScoringJob",
    "ScoringMode",
    "ScoringPipeline",
    "ScoringSettings",
    "ShedReason",
    "SqliteFitStore",
    "StoreUnavailable",
    "SubmitResult",
    "SyncFirstQueue",
    "Teachers",
    "ThrottledLog",
    "TrustAction",
    "TrustRecord",
    "TrustStatus",
    "UnreadableReply",
    "UpstreamFailure",
    "accept_held",
    "build_rag_scorer",
    "combiner_for",
    "decide",
    "default_combination",
    "describe",
    "die_with_parent",
    "features_of",
    "fitted_components",
    "forget_child",
    "is_low_trust",
    "is_unscored",
    "key_cap",
    "lane_of",
    "load_calibration",
    "low_trust",
    "open_scorers",
    "outcome",
    "own_fit_allowed",
    "prepare_rag_request",
    "private_file",
    "rag_report",
    "reap_stale_children",
    "redis_reachable",
    "register_child",
    "require_order",
    "resolved_mode",
    "save_calibration",
    "scoring_configured",
    "scoring_job",
    "scoring_reachable",
    "skip_reason",
    "trust_value",
]
