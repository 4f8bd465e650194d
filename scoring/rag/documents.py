"""The documents of a RAG request: found in the prompt, written into it, carried in a job. Pure.

An answer cites documents by number, so a document *is* its position: ``[n]``
cites the n-th. Clients pass documents either as numbered passages in their
own messages (Trust-Eval's ``Document [1](Title: ...): ...``, or a bare
``[1] ...``) or in the ``documents`` extension field (see ``request.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..factcheck.evidence import Evidence
from ..jobs import message_text

__all__ = [
    "Document",
    "documents_from_job",
    "documents_in_messages",
    "documents_in_text",
    "evidence",
    "format_passages",
    "job_documents",
]

MIN_BARE_WORDS = 5  # a bare "[n] ..." line this short is more likely a numbered list than a passage
DOCUMENT_ROLES = frozenset({"system", "developer", "user"})

# "(Title: T):" where T may hold parentheses, else "(Title: T)" with at most one level of them.
_TITLE = r"\(\s*title:\s*(?:(?P<title>.*?)\)\s*:|(?P<bare_title>(?:[^()]|\([^()]*\))*)\))"
_MARKER = re.compile(
    rf"^\s*(?P<label>(?:document|doc|passage|source)\s*)?\[(?P<number>\d{{1,3}})\]\s*"
    rf"(?:{_TITLE})?\s*:?\s*(?P<text>.*)$",
    re.IGNORECASE,
)
_SECTION = re.compile(r"^\s*(?:question|answer|instruction|query|response)\s*:", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Document:
    """A passage as an answer cites it: ``number`` is the n of ``[n]``; ``id`` is the client's own, if any."""

    number: int
    title: str
    text: str
    id: str | None = None


@dataclass
class _Passage:
    number: int
    title: str
    lines: list[str]
    strong: bool  # written "Document [n]" or with a "(Title: ...)": no numbered list looks like that

    def document(self) -> Document:
        return Document(self.number, self.title, " ".join(" ".join(self.lines).split()))


def _blocks(text: str) -> list[list[_Passage]]:
    """Runs of numbered passages; a new run starts at [1]; a blank line or a prompt section
    ("Question:", "Answer:") ends the passage before it."""
    blocks: list[list[_Passage]] = []
    current: _Passage | None = None
    for line in text.splitlines():
        marker = _MARKER.match(line)
        if marker is not None:
            number = int(marker.group("number"))
            if number == 1:
                blocks.append([])
            title = marker.group("title") if marker.group("title") is not None else marker.group("bare_title")
            current = _Passage(
                number, (title or "").strip(), [marker.group("text")], bool(marker.group("label")) or title is not None
            )
            if blocks:
                blocks[-1].append(current)
        elif current is not None and line.strip() and not _SECTION.match(line):
            current.lines.append(line.strip())
        else:
            current = None
    return blocks


def _valid(block: list[_Passage]) -> bool:
    """Numbered 1..n in order, and either written as documents or long enough to be passages."""
    return [p.number for p in block] == list(range(1, len(block) + 1)) and all(
        p.strong or len(" ".join(p.lines).split()) >= MIN_BARE_WORDS for p in block
    )


def documents_in_text(text: str) -> list[Document] | None:
    """The last run of passages numbered 1..n in ``text`` (the earlier ones are few-shot demos); None if none."""
    if "1]" not in text:  # every run starts at [1] (or [01], [001]): most prompts are read no further
        return None
    valid = [block for block in _blocks(text) if block and _valid(block)]
    return [passage.document() for passage in valid[-1]] if valid else None


def documents_in_messages(messages: Any) -> list[Document] | None:
    """The passages in the latest system, developer or user message that has any; None: closed-book."""
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") in DOCUMENT_ROLES:
            found = documents_in_text(message_text(message))
            if found:
                return found
    return None


def format_passages(documents: Sequence[Document]) -> str:
    """Trust-Eval's ``doc_prompt``, one line per document: ``Document [n](Title: T): text``."""
    return "".join(
        f"Document [{d.number}](Title: {d.title}): {d.text}\n" if d.title else f"Document [{d.number}]: {d.text}\n"
        for d in documents
    )


def job_documents(documents: Sequence[Document]) -> list[dict[str, Any]]:
    """What ``ScoringJob.documents`` holds: ``{id, title, text}`` in citation order (JSON, queue-safe)."""
    return [{"id": d.id, "title": d.title, "text": d.text} for d in documents]


def documents_from_job(items: Iterable[dict[str, Any]] | None) -> list[Document]:
    """Back from ``ScoringJob.documents``, leniently: a missing or odd field reads as empty text, never
    as a skipped document, so that the numbering the answer cites never shifts."""
    documents = []
    for number, item in enumerate(items or (), start=1):
        identifier = item.get("id")
        documents.append(
            Document(
                number,
                str(item.get("title") or ""),
                str(item.get("text") or ""),
                None if identifier is None else str(identifier),
            )
        )
    return documents


def evidence(documents: Iterable[Document]) -> list[Evidence]:
    """The documents as the entailment judge's evidence (``scoring.factcheck.judge.judge_prompt``)."""
    return [Evidence(id=str(d.number), title=d.title, text=d.text, score=0.0) for d in documents]
