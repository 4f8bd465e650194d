"""The evaluation harness: how well trust scores predict answer correctness on labeled data.

What others use:

* the gateway: ``load_calibration(path) -> Calibrator`` once at start-up and
  ``calibrator.probability(trust_ov) -> float`` per record (``x-trust-probability``);
  loading needs only the standard library;
* the CLI: ``trustgate eval run ...``, ``trustgate eval truthfulqa-mc ...`` and
  ``trustgate eval rag ...`` (arguments in ``cli.py``, the work in ``command.py``
  and the ``*_command`` modules, imported only when run).

Inside, one job per module: ``datasets`` (readers), ``matching`` (gold-answer
labels), ``prompts`` (closed-book and confidence prompts), ``cache`` (SQLite
memory for resuming), ``asking`` (the cached ``Ask``), ``runner`` (items to
outcomes), ``outcome`` (the scores read off an outcome), ``metrics`` (pure
metrics and bootstrap), ``summary``, ``fitting`` (calibration fits),
``report`` and ``figures`` (markdown, JSON, PNG), ``truthfulqa_mc`` and
``mc_runner`` (MC1/MC2), ``rag_command`` (Trust-Eval's RAG report). Only
``gateway`` and ``asking`` import ``proxy`` at run time (others name its
settings type in annotations): the harness is a client of the
gateway, reaching upstreams through its ``UpstreamClient`` exactly as the
scorers do in production.
"""

from .calibration import CalibrationError, Calibrator, IsotonicCalibrator, PlattCalibrator, load_calibration, \
    save_calibration

__all__ = ["CalibrationError", "Calibrator", "IsotonicCalibrator", "PlattCalibrator", "load_calibration",
           "save_calibration"]
