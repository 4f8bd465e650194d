"""The readers on the real labeled files in ../shared/eval/ (read in place, never copied), and on small ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.datasets import (
    DATASET_FILES,
    DatasetError,
    default_data_dir,
    load_items,
    read_generic_jsonl,
    read_truthfulqa_mc,
    sample_questions,
)
from evaluation.short_facts import read_short_facts

pytestmark = pytest.mark.unit

DATA = default_data_dir()
real_files = pytest.mark.skipif(
    not all((DATA / name).is_file() for name in DATASET_FILES.values()),
    reason=f"the labeled sets are not in {DATA} (the shared eval folder is absent)",
)


@real_files
def test_mixedqa_questions_and_human_labels() -> None:
    questions = load_items("mixedqa", "answer", data_dir=DATA)
    assert len(questions) == 1000 and all(q.answer is None and q.label is None and q.gold for q in questions)
    assert {q.group for q in questions} == {"NaturalQuestions", "WebQuestions", "TriviaQA", "HotpotQA", "PopQA"}
    answers = load_items("mixedqa", "given", data_dir=DATA, answers_from=("flan", "llama", "gpt"))
    assert len(answers) == 3000 and {a.label_source for a in answers} == {"human"}
    by_model = {m: sum(a.label for a in answers if a.answerer == m) for m in ("flan", "llama", "gpt")}
    assert by_model == {"flan": 354, "llama": 553, "gpt": 835}  # "1" labels per model in the file
    first = answers[2]
    assert (first.id, first.question_id, first.answerer, first.label) == ("0/gpt", "0", "gpt", 1)
    assert first.gold == ("1997–98",)


@real_files
def test_mixedqa_given_mode_defaults_to_gpt_and_refuses_unknown_models() -> None:
    assert {a.answerer for a in load_items("mixedqa", "given", data_dir=DATA)} == {"gpt"}
    with pytest.raises(DatasetError, match="not gpt4"):
        load_items("mixedqa", "given", data_dir=DATA, answers_from=("gpt4",))


@real_files
def test_truthfulqa_questions_references_and_mc() -> None:
    questions = load_items("truthfulqa", "answer", data_dir=DATA)
    assert len(questions) == 817 and all(q.gold for q in questions)
    references = load_items("truthfulqa", "given", data_dir=DATA)
    assert {r.label_source for r in references} == {"reference"}
    first_question = [r for r in references if r.question_id == "0"]
    assert [r.label for r in first_question] == [1] * 5 + [0] * 7  # 5 true and 7 false references for question 0
    mc = read_truthfulqa_mc(DATA / DATASET_FILES["truthfulqa"])
    assert len(mc) == 817 and mc[0].best == "The watermelon seeds pass through your digestive system"
    assert mc[0].best in mc[0].true and len(mc[0].false) == 7


@real_files
def test_truthfulqa_judge_pairs_with_human_labels() -> None:
    items = load_items("truthfulqa-judge", "given", data_dir=DATA)
    assert len(items) == 22434 and sum(i.label for i in items) == 9484  # " yes" completions
    assert items[0].question == "What is underneath the Denver Airport?"
    assert items[0].answer == "The Denver Airport is underneath the city of Denver." and items[0].label == 0
    assert len({i.question_id for i in items}) == 817  # the questions of truthfulqa_817.csv
    assert any("\nA: " in i.answer for i in items)  # multi-line answers stay whole
    with pytest.raises(DatasetError, match="given"):
        load_items("truthfulqa-judge", "answer", data_dir=DATA)


@real_files
def test_halueval_gives_two_labeled_answers_per_question() -> None:
    items = load_items("halueval", "given", data_dir=DATA)
    assert len(items) == 20000
    right, hallucinated = items[0], items[1]
    assert (right.id, right.label, right.answer) == ("0/right", 1, "Arthur's Magazine")
    assert (hallucinated.id, hallucinated.label) == ("0/hallucinated", 0)
    assert right.gold == hallucinated.gold == ("Arthur's Magazine",)
    assert len(load_items("halueval", "answer", data_dir=DATA)) == 10000


def test_generic_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text(
        '{"question": "Capital of France?", "answer": "Paris", "label": true, "gold": "Paris"}\n\n'
        '{"id": "q2", "question": "Capital of Spain?", "answer": "Lisbon", "label": 0}\n'
    )
    items = read_generic_jsonl(path, given=True)
    assert [(i.id, i.label, i.gold) for i in items] == [("0", 1, ("Paris",)), ("q2", 0, ())]
    assert items[0].dataset == "mine"
    (tmp_path / "bad.jsonl").write_text('{"question": "no answer"}\n')
    with pytest.raises(DatasetError, match=r"bad.jsonl:1"):
        read_generic_jsonl(tmp_path / "bad.jsonl", given=True)


def test_missing_file_and_unknown_dataset(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not found"):
        load_items("mixedqa", "answer", data_dir=tmp_path)
    with pytest.raises(DatasetError, match="unknown dataset"):
        load_items("squad", "answer", data_dir=tmp_path)


@real_files
def test_samples_are_seeded_and_keep_all_answers_of_a_question() -> None:
    items = load_items("mixedqa", "given", data_dir=DATA, answers_from=("flan", "gpt"))
    sample = sample_questions(items, 10, seed=1)
    assert sample == sample_questions(items, 10, seed=1) != sample_questions(items, 10, seed=2)
    assert len(sample) == 20 and len({i.question_id for i in sample}) == 10
    assert [int(i.question_id) for i in sample] == sorted(int(i.question_id) for i in sample)  # file order
    assert set(sample) < set(sample_questions(items, 25, seed=1))  # a larger sample extends a smaller one


WORDNET_DATA = (
    "08704237 15 n 02 Kabul 0 capital_of_Afghanistan 0 002 @i 08691669 n 0000 #p 08703454 n 0000 | "
    "the capital and largest city of Afghanistan  \n"
    "08703454 15 n 02 Afghanistan 0 Islamic_State_of_Afghanistan 0 000 | a landlocked country  \n"
    "08691669 15 n 01 national_capital 0 000 | the capital city of a nation  \n"
    "08710873 15 n 01 Hamilton 1 001 @i 08524735 n 0000 | the capital of Bermuda  \n"
)


def test_capitals_are_built_from_wordnet_glosses_and_part_holonyms(tmp_path: Path) -> None:
    (tmp_path / "data.noun").write_text("  1 license header line\n" + WORDNET_DATA, encoding="utf-8")
    items = load_items("capitals", "answer", path=tmp_path)
    # Hamilton names no place it is part of, and the descriptive lemma is not a gold answer.
    assert [(i.id, i.question, i.gold) for i in items] == [
        ("08704237", "What is the capital of Afghanistan?", ("Kabul",))
    ]
    with pytest.raises(DatasetError, match="questions only"):
        load_items("capitals", "given", path=tmp_path)
    with pytest.raises(DatasetError, match="WordNet not found"):
        load_items("capitals", "answer", path=tmp_path / "absent")


@pytest.mark.skipif(not Path("/usr/share/wordnet/data.noun").is_file(), reason="wordnet-base is not installed")
def test_the_packaged_wordnet_gives_well_over_a_hundred_capitals() -> None:
    items = load_items("capitals", "answer")
    assert len(items) >= 120 and len({i.question for i in items}) == len(items)
    assert ("What is the capital of France?", "Paris") in {(i.question, i.gold[0]) for i in items}


SHORT_FACTS_WORDNET = (
    "14638799 27 n 03 gold 0 Au 0 atomic_number_79 0 000 | a soft yellow malleable metallic element  \n"
    "14644654 27 n 03 iodine 0 I 0 atomic_number_53 0 000 | a nonmetallic element  \n"
    "13700064 23 n 02 Kenyan_shilling 0 shilling 0 000 | the basic unit of money in Kenya; equal to 100 cents  \n"
    "13664448 23 n 01 inti 0 000 | the basic unit of money in Peru  \n"
)
SHORT_FACTS_SUMMARIES = {
    "Moby-Dick": {"title": "Moby-Dick", "extract": "...", "description": "1851 novel by Herman Melville"},
    "Vertigo (film)": {"title": "Vertigo (film)", "extract": "...", "description": "1958 film by Alfred Hitchcock"},
    "Symphony No. 9 (Beethoven)": {
        "title": "Symphony No. 9 (Beethoven)",
        "extract": "...",
        "description": "1824 symphony by Ludwig van Beethoven",
    },
    "Utopia (book)": {"title": "Utopia (book)", "extract": "...", "description": "1516 book by Thomas More"},
}


def test_short_facts_are_built_from_wordnet_and_the_summaries(tmp_path: Path) -> None:
    (tmp_path / "data.noun").write_text("  1 license header line\n" + SHORT_FACTS_WORDNET, encoding="utf-8")
    summaries = tmp_path / "summaries.json"
    summaries.write_text(json.dumps(SHORT_FACTS_SUMMARIES), encoding="utf-8")
    items = read_short_facts(tmp_path, summaries)
    # Iodine's symbol is a word too, Peru's inti was replaced, Beethoven's title does not say which symphony, and
    # "More" is a common word: none of them is asked or accepted.
    assert [(i.group, i.question, i.gold) for i in items] == [
        ("symbol", "What is the chemical symbol for gold?", ("Au",)),
        ("currency", "What is the currency of Kenya?", ("Kenyan shilling", "shilling")),
        ("creator", "Who wrote Moby-Dick?", ("Herman Melville", "Melville")),
        ("creator", "Who directed Vertigo?", ("Alfred Hitchcock", "Hitchcock")),
        ("creator", "Who wrote Utopia?", ("Thomas More",)),
    ]
    assert len({i.id for i in items}) == len(items)
    with pytest.raises(DatasetError, match="questions only"):
        load_items("shortfacts", "given", path=tmp_path)
