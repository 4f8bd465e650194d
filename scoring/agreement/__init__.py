"""Evidence agreement ("ev"): does the evidence retrieved for the question name the answer's entity in the
asked relation, name another entity of that kind, or say nothing usable? CPU only, no upstream call.

The check reads the question as a frame (``frame``: a subject, a relation, the kind of answer it wants),
the claim's answer entity, and the statements in the evidence that relate the subject (``statements``,
``clauses``), then agrees, contradicts or abstains (``decide``). It needs no capable judge: on the
embedded 135M model, whose judge calls nearly everything "neutral", it is what reads the corpus.

What the gateway uses: ``scoring.agreement.scorer.EvidenceAgreementScorer`` (the "ev" component, its
CPU work in ``cpu_part``), and ``check_agreement`` for one (question, claim, evidence) at a time.
The scorer's module is imported by what runs it (``scoring.assembly``): this package loads no index.
"""

from .decide import Agreement, Reading, Verdict, check_agreement
from .words import Lexicon, read_lexicon

__all__ = ["Agreement", "Lexicon", "Reading", "Verdict", "check_agreement", "read_lexicon"]
