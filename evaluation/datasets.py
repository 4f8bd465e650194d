"""Readers for the labeled evaluation sets, into one item shape. I/O at the edge, nothing else.

The files stay where they are (``../shared/eval/`` by default, or a path the
user gives); the project never copies them. Two sets are built rather than read:
``capitals``, from packaged WordNet (see ``read_capitals``), and ``shortfacts``, from
packaged WordNet and Wikipedia summaries (see ``short_facts``). Each reader turns a file into
``EvalItem``s: a question, its gold answers, and, for sets that come with
answers to score, the answer, its correctness label and where that label came
from ("human" for annotators' judgements, "reference" for answers that are
true or false by construction). Item ids are stable across runs (the row
number in the file, plus the answer's origin), so cached results find their
item again.
"""

from __future__ import annotations

import csv
import json
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from .items import DatasetError, EvalItem
from .short_facts import SHORT_FACTS_DATASET, read_short_facts

__all__ = [
    "BUILT_DATASETS",
    "CAPITALS_DATASET",
    "DATASET_FILES",
    "MIXEDQA_MODELS",
    "DatasetError",
    "EvalItem",
    "McQuestion",
    "capitals_file",
    "default_data_dir",
    "load_items",
    "read_capitals",
    "read_generic_jsonl",
    "read_halueval",
    "read_mixedqa",
    "read_truthfulqa",
    "read_truthfulqa_judge",
    "read_truthfulqa_mc",
    "sample_questions",
]

Mode = Literal["answer", "given"]

DATASET_FILES = {
    "mixedqa": "mixedqa_human_labels.json",
    "truthfulqa": "truthfulqa_817.csv",
    "truthfulqa-judge": "truthfulqa_judge_truth.jsonl",
    "halueval": "halueval_qa.jsonl",
}
MIXEDQA_MODELS = ("flan", "llama", "gpt")  # FLAN-T5-XL, LLaMA-7B, GPT-3.5-Turbo in the paper
# The question is one line; some answers run over several (with further "A:" lines of their own).
_JUDGE_PROMPT = re.compile(r"^Q: (?P<question>[^\n]*)\nA: (?P<answer>.*)\nTrue:$", re.DOTALL)


@dataclass(frozen=True)
class McQuestion:
    """A TruthfulQA question with its true and false reference answers (MC1 and MC2 tasks)."""

    id: str
    question: str
    best: str
    true: tuple[str, ...]
    false: tuple[str, ...]

    @property
    def question_id(self) -> str:
        return self.id


def default_data_dir() -> Path:
    """``../shared/eval`` beside the repository, where the labeled sets live read-only."""
    return Path(__file__).resolve().parents[1].parent / "shared" / "eval"


def _open(path: Path) -> Path:
    if not path.is_file():
        raise DatasetError(f"dataset file not found: {path}")
    return path


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with _open(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            if line.strip():
                yield number, json.loads(line)


def read_mixedqa(path: Path, answers_from: Sequence[str] = ()) -> list[EvalItem]:
    """MixedQA: the bare questions, or each named model's answers with the human label."""
    unknown = set(answers_from) - set(MIXEDQA_MODELS)
    if unknown:
        raise DatasetError(f"MixedQA has answers from {', '.join(MIXEDQA_MODELS)}, not {', '.join(sorted(unknown))}")
    rows = json.loads(_open(path).read_text(encoding="utf-8"))
    items = []
    for number, row in enumerate(rows):
        base: dict[str, Any] = dict(
            dataset="mixedqa",
            question_id=str(number),
            question=row["question"],
            gold=tuple(row["answers"]),
            group=row.get("source"),
        )
        if not answers_from:
            items.append(EvalItem(id=str(number), **base))
        for model in answers_from:
            judged = row[model]
            items.append(
                EvalItem(
                    id=f"{number}/{model}",
                    answer=judged["pred"],
                    label=int(judged["human_eval"]),
                    label_source="human",
                    answerer=model,
                    **base,
                )
            )
    return items


def _answers(cell: str) -> tuple[str, ...]:
    return tuple(a.strip() for a in cell.split(";") if a.strip())


def _truthfulqa_rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    with _open(path).open(encoding="utf-8", newline="") as handle:
        yield from enumerate(csv.DictReader(handle))


def read_truthfulqa(path: Path, *, given: bool = False) -> list[EvalItem]:
    """TruthfulQA: questions with the true references as gold, or every reference answer labeled."""
    items = []
    for number, row in _truthfulqa_rows(path):
        true, false = _answers(row["Correct Answers"]), _answers(row["Incorrect Answers"])
        base: dict[str, Any] = dict(
            dataset="truthfulqa", question_id=str(number), question=row["Question"], gold=true, group=row["Category"]
        )
        if not given:
            items.append(EvalItem(id=str(number), **base))
            continue
        for kind, answers, label in (("true", true, 1), ("false", false, 0)):
            items += [
                EvalItem(
                    id=f"{number}/{kind}/{k}",
                    answer=a,
                    label=label,
                    label_source="reference",
                    answerer="reference",
                    **base,
                )
                for k, a in enumerate(answers)
            ]
    return items


def read_truthfulqa_mc(path: Path) -> list[McQuestion]:
    return [
        McQuestion(
            id=str(number),
            question=row["Question"],
            best=row["Best Answer"].strip(),
            true=_answers(row["Correct Answers"]),
            false=_answers(row["Incorrect Answers"]),
        )
        for number, row in _truthfulqa_rows(path)
    ]


def read_truthfulqa_judge(path: Path) -> list[EvalItem]:
    """TruthfulQA's judge data: (question, answer) pairs with a human truthfulness label."""
    items: list[EvalItem] = []
    question_ids: dict[str, str] = {}
    for number, row in _jsonl(path):
        match = _JUDGE_PROMPT.match(row["prompt"])
        if match is None:
            raise DatasetError(f"{path}:{number + 1}: prompt is not 'Q: ...\\nA: ...\\nTrue:'")
        question = match["question"]
        question_id = question_ids.setdefault(question, str(len(question_ids)))
        items.append(
            EvalItem(
                dataset="truthfulqa-judge",
                id=str(number),
                question_id=question_id,
                question=question,
                answer=match["answer"],
                label=int(row["completion"].strip().lower() == "yes"),
                label_source="human",
                answerer="judge-data",
            )
        )
    return items


def read_halueval(path: Path, *, given: bool = False) -> list[EvalItem]:
    """HaluEval QA: questions with the right answer as gold, or the right and hallucinated answers labeled."""
    items = []
    for number, row in _jsonl(path):
        base = dict(dataset="halueval", question_id=str(number), question=row["question"], gold=(row["right_answer"],))
        if not given:
            items.append(EvalItem(id=str(number), **base))
            continue
        items += [
            EvalItem(
                id=f"{number}/right",
                answer=row["right_answer"],
                label=1,
                label_source="reference",
                answerer="reference",
                **base,
            ),
            EvalItem(
                id=f"{number}/hallucinated",
                answer=row["hallucinated_answer"],
                label=0,
                label_source="reference",
                answerer="reference",
                **base,
            ),
        ]
    return items


def read_generic_jsonl(path: Path, *, given: bool = False) -> list[EvalItem]:
    """Lines of ``{question, answer, label}`` (``label`` 0/1 or true/false; optional ``id``, ``gold``)."""
    items = []
    for number, row in _jsonl(path):
        if "question" not in row or (given and ("answer" not in row or "label" not in row)):
            raise DatasetError(f"{path}:{number + 1}: needs question{', answer and label' if given else ''}")
        item_id = str(row.get("id", number))
        gold = row.get("gold") or ()
        items.append(
            EvalItem(
                dataset=path.stem,
                id=item_id,
                question_id=item_id,
                question=row["question"],
                gold=(gold,) if isinstance(gold, str) else tuple(gold),
                answer=row.get("answer") if given else None,
                label=int(bool(row["label"])) if given else None,
                label_source="human" if given else None,
                answerer="given" if given else None,
            )
        )
    return items


# Capitals: a labeled set the local demo model is about half right on, built from packaged WordNet.
#
# MixedQA's questions are too hard for SmolLM2-135M (7 of 200 right), so every correct-vs-wrong
# figure on its own answers turns on a handful of items. Capital cities are short facts that a small
# model knows for famous places and guesses for obscure ones. The questions come from Debian's
# wordnet-base (installed by `make install`); nothing is downloaded or committed: every noun synset
# whose gloss starts with "the capital" and which is a part (#p) of another synset gives "What is the
# capital of <that synset's first lemma>?", with the capital's own lemmas as gold answers (descriptive
# ones such as "capital of Afghanistan" dropped). Item ids are the capital's synset offset.
CAPITALS_DATASET = "capitals"
# The sets built from packaged data rather than read from a file (``path``: their WordNet folder).
BUILT_DATASETS = (CAPITALS_DATASET, SHORT_FACTS_DATASET)


def _lemmas(fields: list[str]) -> tuple[str, ...]:
    count = int(fields[3], 16)
    return tuple(fields[4 + 2 * i].replace("_", " ") for i in range(count))


def _part_holonyms(fields: list[str]) -> list[str]:
    cursor = 4 + 2 * int(fields[3], 16)
    pointers = int(fields[cursor])
    return [
        fields[cursor + 2 + 4 * i]
        for i in range(pointers)
        if fields[cursor + 1 + 4 * i] == "#p" and fields[cursor + 3 + 4 * i] == "n"
    ]


def _is_name_of_the_city(lemma: str) -> bool:
    lowered = lemma.lower()
    return "capital" not in lowered and not lowered.startswith("city of")


def capitals_file(wordnet_dir: Path | None = None) -> Path:
    """WordNet's noun file the capitals are read from (by default the packaged WordNet Trust_BC uses).

    Imported here, not at the top: ``trustgate --help`` registers the eval
    sub-command, which imports this module, and scoring.consistency's package
    loads spaCy and gensim.
    """
    if wordnet_dir is None:
        from scoring.consistency.packaged import WORDNET_DIR

        wordnet_dir = WORDNET_DIR
    return wordnet_dir / "data.noun"


def read_capitals(wordnet_dir: Path | None = None) -> list[EvalItem]:
    """One question per WordNet capital that is part of a named place, in file order."""
    data = capitals_file(wordnet_dir)
    if not data.is_file():
        raise DatasetError(f"WordNet not found at {data} (Debian package wordnet-base; `make install`)")
    lines: dict[str, list[str]] = {}
    capitals: list[str] = []
    with data.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.startswith("  "):
                continue
            head, _, gloss = line.partition(" | ")
            fields = head.split()
            lines[fields[0]] = fields
            if gloss.startswith("the capital"):
                capitals.append(fields[0])
    items, seen = [], set()
    for offset in capitals:
        fields = lines[offset]
        gold = tuple(lemma for lemma in _lemmas(fields) if _is_name_of_the_city(lemma))
        holonyms = [lines[h] for h in _part_holonyms(fields) if h in lines]
        if not gold or not holonyms:
            continue
        place = _lemmas(holonyms[0])[0]
        question = f"What is the capital of {place}?"
        if question in seen:
            continue
        seen.add(question)
        items.append(
            EvalItem(
                dataset=CAPITALS_DATASET, id=offset, question_id=offset, question=question, gold=gold, group="wordnet"
            )
        )
    return items


def load_items(
    dataset: str,
    mode: Mode,
    *,
    data_dir: Path | None = None,
    path: Path | None = None,
    answers_from: Sequence[str] = (),
) -> list[EvalItem]:
    """The items of ``dataset`` for ``mode``: "answer" (questions only) or "given" (labeled answers)."""
    if dataset in BUILT_DATASETS:
        if mode == "given":
            raise DatasetError(f"{dataset} has questions only: use mode 'answer'")
        return read_capitals(path) if dataset == CAPITALS_DATASET else read_short_facts(path)
    if dataset == "jsonl":
        if path is None:
            raise DatasetError("the jsonl dataset needs a file path")
        return read_generic_jsonl(path, given=mode == "given")
    if dataset not in DATASET_FILES:
        known = ", ".join([*DATASET_FILES, *BUILT_DATASETS, "jsonl"])
        raise DatasetError(f"unknown dataset {dataset!r}; known: {known}")
    file = path or (data_dir or default_data_dir()) / DATASET_FILES[dataset]
    given = mode == "given"
    if dataset == "mixedqa":
        return read_mixedqa(file, (answers_from or ("gpt",)) if given else ())
    if dataset == "truthfulqa":
        return read_truthfulqa(file, given=given)
    if dataset == "halueval":
        return read_halueval(file, given=given)
    if not given:
        raise DatasetError("truthfulqa-judge has labeled answers only: use mode 'given'")
    return read_truthfulqa_judge(file)


class _HasQuestion(Protocol):
    @property
    def question_id(self) -> str: ...


Q = TypeVar("Q", bound=_HasQuestion)


def sample_questions(items: Sequence[Q], size: int | None, seed: int) -> list[Q]:
    """A seeded sample of ``size`` questions, keeping every item of each sampled question, in file order.

    The sample is the first ``size`` questions of one seeded shuffle, so with
    the same seed a larger sample contains every smaller one: a run can be
    extended, and its cached results reused, by raising ``--limit``.
    """
    question_ids = list(dict.fromkeys(item.question_id for item in items))
    if size is None or size >= len(question_ids):
        return list(items)
    random.Random(seed).shuffle(question_ids)
    chosen = set(question_ids[:size])
    return [item for item in items if item.question_id in chosen]
