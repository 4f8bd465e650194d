"""Detecting a RAG request (passages in the prompt, or the ``documents`` field) and rewriting its body."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scoring.rag import (
    Document,
    InvalidRagField,
    RagLabels,
    documents_in_messages,
    format_passages,
    prepare_rag_request,
)
from scoring.rag.documents import documents_in_text
from scoring.types import JobPolicy

pytestmark = pytest.mark.unit

TRUST_EVAL_PROMPT = """Instruction: Write an accurate answer using only the provided search results and cite them.

Question: Which is the most rainy place on earth?

Document [1](Title: Cherrapunji): Cherrapunji has often been credited as being the wettest place on Earth.
Document [2](Title: Mawsynram): Mawsynram receives one of the highest rainfalls in India.
Answer: Several places claim it [1][2].


Question: Who played Galen in Planet of the Apes?

Document [1](Title: Planet of the Apes (2001 film)): Small roles include David Warner,
and cameo appearances by Charlton Heston.
Document [2](Title: Severn Darden): Severn Darden played Kolp.
Document [3](Title: Roddy McDowall): Roddy McDowall played Galen in the television series.
Answer:"""


def test_trust_eval_passages_the_last_run_after_the_demos() -> None:
    assert documents_in_text(TRUST_EVAL_PROMPT) == [
        Document(
            1,
            "Planet of the Apes (2001 film)",
            "Small roles include David Warner, and cameo appearances by Charlton Heston.",
        ),
        Document(2, "Severn Darden", "Severn Darden played Kolp."),
        Document(3, "Roddy McDowall", "Roddy McDowall played Galen in the television series."),
    ]


def test_bare_numbered_passages() -> None:
    text = (
        "Use these search results:\n[1] The Eiffel Tower is 330 metres tall.\n\n"
        "[2] It was built for the 1889 World's Fair in Paris.\nQuestion: how tall is it?"
    )
    assert documents_in_text(text) == [
        Document(1, "", "The Eiffel Tower is 330 metres tall."),
        Document(2, "", "It was built for the 1889 World's Fair in Paris."),
    ]
    assert documents_in_text("Document [1] (Title: A (x)) text a\nSource [2]: text b") == [
        Document(1, "A (x)", "text a"),
        Document(2, "", "text b"),
    ]
    # Zero-padded numbers are passages too: the quick check for "1]" lets them through.
    assert documents_in_text("Document [01]: text a\nDocument [02]: text b") == [
        Document(1, "", "text a"),
        Document(2, "", "text b"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "[1] Fix the bug\n[2] Add tests",  # a numbered to-do list, not passages
        "Document [1]: one\nDocument [3]: three",  # not numbered 1..n
        "See [1] for details about the tower and its history.",  # a citation, not a passage
        "What is the capital of France?",
    ],
)
def test_not_passages(text: str) -> None:
    assert documents_in_text(text) is None


def test_documents_in_messages_reads_the_latest_system_or_user_message_that_has_them() -> None:
    old = [{"role": "user", "content": "Document [1]: The old tower is red.\nWhich colour?"}]
    new = [
        {"role": "system", "content": [{"type": "text", "text": "Document [1](Title: T): The new tower is blue."}]},
        {"role": "assistant", "content": "Document [1]: not from the client."},
        {"role": "user", "content": "Which colour?"},
    ]
    assert documents_in_messages(old + new) == [Document(1, "T", "The new tower is blue.")]
    assert documents_in_messages([{"role": "tool", "content": "Document [1]: tool output."}]) is None
    assert documents_in_messages("not a list") is None
    assert documents_in_messages([None, {"role": "user"}]) is None


def body(**extra: Any) -> dict[str, Any]:
    return {
        "model": "fake",
        "messages": [
            {"role": "system", "content": "Answer with citations."},
            {"role": "user", "content": "How tall is the tower?"},
        ],
        **extra,
    }


FIELD_DOCUMENTS = [{"id": "a", "title": "Tower", "text": "The tower is 330 metres tall."}, "It was built in 1889."]


def test_the_documents_field_is_removed_and_appended_to_the_prompt_as_trust_eval_passages() -> None:
    original = body(documents=FIELD_DOCUMENTS, answerable=True, reference_claims=["It is 330 metres tall."])
    snapshot = copy.deepcopy(original)
    forward, rag = prepare_rag_request(original)

    assert original == snapshot  # the client's body is not mutated
    assert set(forward) == {"model", "messages"}
    assert rag is not None and (rag.source, rag.appended) == ("field", True)
    assert rag.documents == (
        Document(1, "Tower", "The tower is 330 metres tall.", "a"),
        Document(2, "", "It was built in 1889."),
    )
    assert forward["messages"][0] == original["messages"][0]
    assert forward["messages"][1]["content"] == (
        "How tall is the tower?\n\n"
        "Document [1](Title: Tower): The tower is 330 metres tall.\n"
        "Document [2]: It was built in 1889.\n"
    )
    assert documents_in_messages(forward["messages"]) == [
        Document(1, "Tower", "The tower is 330 metres tall."),
        Document(2, "", "It was built in 1889."),
    ]
    assert rag.job_documents() == [
        {"id": "a", "title": "Tower", "text": "The tower is 330 metres tall."},
        {"id": None, "title": "", "text": "It was built in 1889."},
    ]
    assert rag.labels == RagLabels(True, ("It is 330 metres tall.",))
    assert JobPolicy.model_validate_json(JobPolicy(rag=rag.labels).model_dump_json()).rag == rag.labels


def test_passages_go_into_multipart_content_or_a_new_user_message() -> None:
    parts = {
        "model": "fake",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "How tall?"}]}],
        "documents": ["The tower is 330 metres tall."],
    }
    forward, _ = prepare_rag_request(parts)
    assert forward["messages"][0]["content"][-1] == {
        "type": "text",
        "text": "\n\nDocument [1]: The tower is 330 metres tall.\n",
    }
    no_user = {"model": "fake", "messages": [{"role": "system", "content": "Be brief."}], "documents": ["Text."]}
    assert prepare_rag_request(no_user)[0]["messages"][-1] == {"role": "user", "content": "Document [1]: Text.\n"}


def test_documents_already_in_the_prompt_are_not_appended_again() -> None:
    prompt = body()
    prompt["messages"][1]["content"] += "\n\n" + format_passages([Document(1, "Tower", "It is tall.")])
    forward, rag = prepare_rag_request({**prompt, "documents": ["It is tall."]})
    assert forward == prompt
    assert rag is not None and (rag.source, rag.appended, rag.documents[0].text) == ("field", False, "It is tall.")

    forward, rag = prepare_rag_request(prompt)
    assert forward == prompt
    assert rag is not None and (rag.source, rag.appended, rag.documents) == (
        "messages",
        False,
        (Document(1, "Tower", "It is tall."),),
    )


def test_closed_book_requests_lose_only_the_extension_fields() -> None:
    assert prepare_rag_request(body()) == (body(), None)
    assert prepare_rag_request(body(answerable=False, reference_claims=["x"])) == (body(), None)


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"documents": []}, "documents"),
        ({"documents": "The tower."}, "documents"),
        ({"documents": ["ok", {"title": "no text"}]}, "documents[1]"),
        ({"documents": [{"text": "  "}]}, "documents[0]"),
        ({"documents": [{"text": "ok", "title": 3}]}, "documents[0]"),
        ({"documents": [{"text": "ok", "id": [1]}]}, "documents[0]"),
        ({"documents": ["ok"] * 101}, "documents"),
        ({"documents": ["ok"], "answerable": "yes"}, "answerable"),
        ({"documents": ["ok"], "reference_claims": "one claim"}, "reference_claims"),
        ({"documents": ["ok"], "reference_claims": ["fine", ""]}, "reference_claims"),
    ],
)
def test_malformed_extension_fields_are_refused_with_their_name(extra: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRagField) as refused:
        prepare_rag_request(body(**extra))
    assert refused.value.param == param
