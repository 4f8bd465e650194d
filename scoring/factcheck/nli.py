"""An optional local entailment judge: an NLI sequence classifier loaded from a directory.

Where a deployment has an NLI model (e.g. an MNLI cross-encoder) on disk, it
can judge evidence without an upstream call. torch and transformers are
imported only here and only when ``factcheck.nli_model_dir`` is set, so the
gateway neither needs nor loads them otherwise (``pip install
'trustgate[nli]'``). Nothing is downloaded: the directory must hold the model
and its tokenizer.

Each passage is a premise and the answer the hypothesis. The passage whose
verdict is most decisive (highest support or contradict probability) gives
the label probabilities: one passage that states the fact is enough, as it is
for the LLM judge reading all ten.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .evidence import Evidence
from .judge import LABELS, Label

__all__ = ["LocalNLIJudge", "NLIModelError", "map_nli_labels"]

MAX_TOKENS = 512


def map_nli_labels(model_labels: Mapping[int, str], configured: Mapping[str, str]) -> dict[int, Label]:
    """Each output of the model as support / contradict / neutral.

    ``configured`` maps the model's label names (``config.id2label``, case
    ignored) to ours; unconfigured names are recognised by their usual words
    (entailment, contradiction, neutral). Raises ValueError when an output
    stays unmapped or a configured value is not one of our labels.
    """
    wanted = {name.lower(): label for name, label in configured.items()}
    mapping: dict[int, Label] = {}
    for index, name in model_labels.items():
        label = wanted.get(name.lower()) or _usual_label(name.lower())
        if label not in LABELS:
            raise ValueError(
                f"NLI label {name!r} maps to {label!r}: set factcheck.nli_labels to "
                f"support / contradict / neutral for each of {sorted(model_labels.values())}"
            )
        mapping[index] = label
    return mapping


def _usual_label(name: str) -> str | None:
    for stem, label in (("entail", "support"), ("contradict", "contradict"), ("neutral", "neutral")):
        if stem in name:
            return label
    return None


class NLIModelError(RuntimeError):
    """The configured model cannot be loaded: no such files, no torch or transformers, or unmapped labels.

    One error for callers to turn into theirs (the gateway's config error, the
    evaluation's missing assets) instead of a traceback at start-up.
    """


class LocalNLIJudge:
    """Loaded once per process; ``judge`` is CPU-bound and meant for a worker thread."""

    def __init__(self, model_dir: Path, labels: Mapping[str, str]) -> None:
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            self._torch = torch
            self._tokenizer: Any = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
            self._model: Any = AutoModelForSequenceClassification.from_pretrained(model_dir, local_files_only=True)
            self._model.eval()
            self._labels = map_nli_labels(self._model.config.id2label, labels)
        except (ImportError, OSError, ValueError) as exc:
            raise NLIModelError(f"cannot load the NLI model in {model_dir}: {exc}") from exc

    def judge(self, evidence: Sequence[Evidence], answer: str) -> dict[Label, float]:
        """Label probabilities from the most decisive passage."""
        inputs = self._tokenizer(
            [e.text for e in evidence],
            [answer] * len(evidence),
            truncation="only_first",
            max_length=MAX_TOKENS,
            padding=True,
            return_tensors="pt",
        )
        with self._torch.inference_mode():
            rows = self._model(**inputs).logits.softmax(dim=-1).tolist()
        verdicts = [self._by_label(row) for row in rows]
        return max(verdicts, key=lambda probs: max(probs["support"], probs["contradict"]))

    def _by_label(self, row: list[float]) -> dict[Label, float]:
        probs = dict.fromkeys(LABELS, 0.0)
        for index, p in enumerate(row):
            probs[self._labels[index]] += p
        return probs
