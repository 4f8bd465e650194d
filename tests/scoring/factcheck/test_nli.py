"""The optional local NLI judge, on a tiny classifier built here (nothing is downloaded)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from scoring.cpu_pool import CpuParts, InThreads
from scoring.factcheck.index import EvidenceIndex
from scoring.factcheck.nli import LocalNLIJudge, NLIModelError, map_nli_labels
from scoring.factcheck.scorer import FactCheckScorer
from scoring.settings import FactCheckSettings
from scoring.types import Reply, ScoringJob

pytestmark = pytest.mark.unit

ID2LABEL = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}


def test_usual_label_names_are_recognised_and_others_configured() -> None:
    assert map_nli_labels(ID2LABEL, {}) == {0: "contradict", 1: "neutral", 2: "support"}
    assert map_nli_labels({0: "LABEL_0", 1: "LABEL_1"}, {"label_0": "support", "LABEL_1": "contradict"}) == {
        0: "support",
        1: "contradict",
    }
    with pytest.raises(ValueError, match="nli_labels"):
        map_nli_labels({0: "LABEL_0"}, {})
    with pytest.raises(ValueError, match="nli_labels"):
        map_nli_labels(ID2LABEL, {"ENTAILMENT": "yes"})


@pytest.fixture(scope="module")
def tiny_nli_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer BERT classifier whose output is its bias: ENTAILMENT, whatever the input."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    directory = tmp_path_factory.mktemp("nli")
    vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "paris", "capital", "france"])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]"
    ).save_pretrained(directory)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=1,
        intermediate_size=8,
        max_position_embeddings=512,
        num_labels=3,
        id2label=ID2LABEL,
        label2id={v: k for k, v in ID2LABEL.items()},
    )
    model = transformers.BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor([0.0, 1.0, 3.0]))
    model.save_pretrained(directory)
    return directory


async def no_upstream(messages: list[dict[str, Any]], **params: Any) -> Reply:
    raise AssertionError("the NLI judge makes no upstream call")


def test_the_local_nli_model_judges_without_an_upstream_call(tiny_nli_model: Path, facts_index: EvidenceIndex) -> None:
    scorer = FactCheckScorer(
        InThreads(CpuParts(evidence=facts_index)), FactCheckSettings(nli_model_dir=str(tiny_nli_model))
    )
    job = ScoringJob(id="j", model="m", question="What is the capital of France?", answer="Paris.")
    result = asyncio.run(scorer.score(job, no_upstream))
    probs = result.details.label_probs
    assert (result.label, result.upstream_calls, result.details.judge, result.details.probs_from) == (
        "support",
        0,
        "nli",
        "nli",
    )
    assert probs["support"] > probs["neutral"] > probs["contradict"]
    assert sum(probs.values()) == pytest.approx(1.0)
    assert result.value == pytest.approx(probs["support"] + 0.5 * probs["neutral"])


def test_configured_label_names_override_the_usual_ones(tiny_nli_model: Path, facts_index: EvidenceIndex) -> None:
    settings = FactCheckSettings(
        nli_model_dir=str(tiny_nli_model), nli_labels={"ENTAILMENT": "contradict", "CONTRADICTION": "support"}
    )
    job = ScoringJob(id="j", model="m", question="What is the capital of France?", answer="Paris.")
    result = asyncio.run(FactCheckScorer(InThreads(CpuParts(evidence=facts_index)), settings).score(job, no_upstream))
    assert result.label == "contradict"


def test_a_model_that_cannot_be_loaded_is_one_named_error(tiny_nli_model: Path, tmp_path: Path) -> None:
    """Missing files and unmapped label names alike: the caller turns it into its own error, not a traceback."""
    with pytest.raises(NLIModelError, match=r"cannot load the NLI model in .*missing"):
        LocalNLIJudge(tmp_path / "missing", {})
    with pytest.raises(NLIModelError, match="nli_labels"):
        LocalNLIJudge(tiny_nli_model, {"ENTAILMENT": "yes"})
