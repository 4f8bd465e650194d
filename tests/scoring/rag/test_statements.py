"""Statements and citations on messy answers."""

from __future__ import annotations

import pytest

from scoring.rag.statements import Statement, parse_citations, split_statements, strip_citations

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "documents", "expected"),
    [
        ("Paris [1][2].", 3, ((1, 2), ())),
        ("Paris [1, 2] and [2;3].", 3, ((1, 2, 3), ())),
        ("Paris [1-3].", 5, ((1, 2, 3), ())),
        ("Paris [2\u20134] [1 to 2].", 5, ((2, 3, 4, 1), ())),
        ("Paris [Document 1] [Doc 2] [doc. 3] [Source 4] [Passage 5].", 5, ((1, 2, 3, 4, 5), ())),
        ("Paris [Documents 1 and 3] [Document 1, Document 2].", 3, ((1, 3, 2), ())),
        ("Paris[^2] [ 3 ].", 3, ((2, 3), ())),
        ("Paris [0] [4] [2020] [1].", 3, ((1,), (0, 4, 2020))),
        ("Paris [1-500].", 3, ((1,), (500,))),  # a span too wide to be meant: its ends only
        ("Paris [sic] [a] [] [1a] (1) [[1]].", 3, ((1,), ())),
        ("No citation at all.", 3, ((), ())),
    ],
)
def test_citation_shapes(text: str, documents: int, expected: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    assert parse_citations(text, documents) == expected


def test_citations_are_stripped_for_the_judge() -> None:
    assert strip_citations("Paris is the capital [1][2], and big [Document 3].") == "Paris is the capital, and big."
    assert strip_citations("Paris.[1] Rome [2 ,3]!") == "Paris. Rome!"


def texts(answer: str, documents: int = 3) -> list[str]:
    return [s.text for s in split_statements(answer, documents)]


def test_sentences_split_after_citations_written_either_side_of_the_full_stop() -> None:
    assert texts("Paris is in France [1]. It is big.[2] Rome is in Italy. [3] Done!") == [
        "Paris is in France [1].",
        "It is big.[2]",
        "Rome is in Italy. [3]",
        "Done!",
    ]
    assert texts("Paris is in France [1].It is big [2].") == ["Paris is in France [1].", "It is big [2]."]


def test_abbreviations_initials_and_numbers_do_not_end_a_sentence() -> None:
    assert texts("Dr. Smith met J. K. Rowling in the U.S. in 2.5 hours, e.g. on Monday. Then he left.") == [
        "Dr. Smith met J. K. Rowling in the U.S. in 2.5 hours, e.g. on Monday.",
        "Then he left.",
    ]


def test_lines_and_list_items_are_statements_and_lone_citations_join_the_one_before() -> None:
    answer = "Answer:\n\n- Paris is in France\n* Rome is in Italy [2]\n1. Berlin is in Germany.\n[1][3]\n---\n"
    statements = split_statements(answer, 3)
    assert [s.text for s in statements] == [
        "Answer:",
        "Paris is in France",
        "Rome is in Italy [2]",
        "Berlin is in Germany. [1][3]",
    ]
    assert statements[-1] == Statement("Berlin is in Germany. [1][3]", "Berlin is in Germany.", (1, 3), ())


def test_out_of_range_ids_are_recorded_on_their_statement() -> None:
    first, second = split_statements("Paris [1][9]. Rome [0].", 2)
    assert (first.citations, first.out_of_range, second.citations, second.out_of_range) == ((1,), (9,), (), (0,))


def test_empty_and_citation_only_answers_have_no_statements() -> None:
    assert split_statements("", 3) == []
    assert split_statements(" [1][2] \n ... \n", 3) == []
