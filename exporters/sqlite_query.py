"""SQL for listing and summarising trust records in the SQLite store.

The filterable fields are virtual generated columns over the stored JSON (the
owner is the store's own column), so writes stay one ``INSERT`` and a store
written before these columns existed gains them (and their indexes) on open.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from .record_query import RecordQuery

__all__ = ["add_query_columns", "label_counts_statement", "labelled_statement", "list_statement", "summary_statement"]

_COLUMNS = {
    "q_model": "TEXT GENERATED ALWAYS AS (json_extract(record, '$.model')) VIRTUAL",
    "q_label": "TEXT GENERATED ALWAYS AS (json_extract(record, '$.label')) VIRTUAL",
    "q_status": "TEXT GENERATED ALWAYS AS (json_extract(record, '$.status')) VIRTUAL",
    "q_score": "REAL GENERATED ALWAYS AS (json_extract(record, '$.score')) VIRTUAL",
    "q_error": "INTEGER GENERATED ALWAYS AS (json_extract(record, '$.error') IS NOT NULL) VIRTUAL",
    "q_labelled_at": "REAL GENERATED ALWAYS AS (json_extract(feedback, '$.labelled_at')) VIRTUAL",
    "q_labelled_by": "TEXT GENERATED ALWAYS AS (json_extract(feedback, '$.by')) VIRTUAL",
}
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS trust_records_page ON trust_records (created_at, id)",
    "CREATE INDEX IF NOT EXISTS trust_records_owner_page ON trust_records (owner, created_at, id)",
    "CREATE INDEX IF NOT EXISTS trust_records_model_page ON trust_records (q_model, created_at, id)",
    "CREATE INDEX IF NOT EXISTS trust_records_label_page ON trust_records (q_label, created_at, id)",
    # Covers the summary's columns, so counting a window never parses the records' JSON.
    "CREATE INDEX IF NOT EXISTS trust_records_summary ON trust_records (created_at, q_model, q_label, q_score)",
    "CREATE INDEX IF NOT EXISTS trust_records_owner_summary "
    "ON trust_records (owner, created_at, q_model, q_label, q_score)",
    # A model's labelled records, newest label first: what the per-model fit reads.
    "CREATE INDEX IF NOT EXISTS trust_records_labelled ON trust_records (q_model, q_labelled_at) "
    "WHERE q_labelled_at IS NOT NULL",
)
_EQUALS = {"model": "q_model", "label": "q_label", "status": "q_status"}


def add_query_columns(db: sqlite3.Connection) -> None:
    """Add the generated columns and indexes a listing needs, where missing (idempotent)."""
    present = {row[1] for row in db.execute("PRAGMA table_xinfo(trust_records)")}
    for name, definition in _COLUMNS.items():
        if name not in present:
            db.execute(f"ALTER TABLE trust_records ADD COLUMN {name} {definition}")
    for statement in _INDEXES:
        db.execute(statement)


def _window(owner: str | None, since: float | None, until: float | None) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    args: list[Any] = []
    if owner is not None:
        where.append("owner = ?")
        args.append(owner)
    if since is not None:
        where.append("created_at >= ?")
        args.append(since)
    if until is not None:
        where.append("created_at < ?")
        args.append(until)
    return where, args


def list_statement(query: RecordQuery, owner: str | None) -> tuple[str, list[Any]]:
    """One page plus one row (to know whether another page follows), newest first."""
    where, args = _window(owner, query.since_s, query.until_s)
    for field, column in _EQUALS.items():
        if (value := getattr(query, field)) is not None:
            where.append(f"{column} = ?")
            args.append(value)
    if query.has_error is not None:
        where.append("q_error = ?")
        args.append(int(query.has_error))
    if query.labelled is not None:
        where.append("feedback IS NOT NULL" if query.labelled else "feedback IS NULL")
    value = "q_score" if query.score_of == "score" else "json_extract(record, ?)"
    value_args = [] if query.score_of == "score" else [f"$.components.{query.score_of}.value"]
    for bound, op in ((query.min_score, ">="), (query.max_score, "<=")):
        if bound is not None:
            where.append(f"{value} {op} ?")
            args += [*value_args, bound]
    if (after := query.after) is not None:
        where.append("(created_at, id) < (?, ?)")
        args += list(after)
    sql = (
        "SELECT record, feedback FROM trust_records"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY created_at DESC, id DESC LIMIT ?"
    )
    return sql, [*args, query.limit + 1]


def summary_statement(owner: str | None, since: float, until: float, limit: int) -> tuple[str, list[Any]]:
    """Read from a covering index (named: without statistics the planner prefers the narrower time index)."""
    where, args = _window(owner, since, until)
    index = "trust_records_summary" if owner is None else "trust_records_owner_summary"
    return (
        f"SELECT created_at, q_model, q_label, q_score FROM trust_records INDEXED BY {index} WHERE "
        + " AND ".join(where)
        + " ORDER BY created_at DESC LIMIT ?",
        [*args, limit],
    )


def _labelled_by(by: frozenset[str] | None) -> tuple[str, list[str]]:
    """The condition (and its arguments) that keeps labels one of ``by`` gave; none when ``by`` is None."""
    if by is None:
        return "", []
    names = sorted(by)
    return f" AND q_labelled_by IN ({','.join('?' * len(names))})", names


def labelled_statement(model: str, limit: int, by: frozenset[str] | None = None) -> tuple[str, list[Any]]:
    """A model's records that carry feedback (given by one of ``by``, when given), newest label first, over the
    partial index of labels."""
    among, names = _labelled_by(by)
    return (
        "SELECT record, feedback FROM trust_records WHERE q_model = ? AND q_labelled_at IS NOT NULL"
        + among
        + " ORDER BY q_labelled_at DESC LIMIT ?",
        [model, *names, limit],
    )


def label_counts_statement(by: frozenset[str] | None = None) -> tuple[str, list[Any]]:
    """Each model's labelled records (labelled by one of ``by``, when given) and how many were labelled correct,
    over the partial index of labels."""
    among, names = _labelled_by(by)
    return (
        "SELECT q_model, COUNT(*), SUM(json_extract(feedback, '$.correct') = 1) FROM trust_records "
        "WHERE q_labelled_at IS NOT NULL AND q_model IS NOT NULL" + among + " GROUP BY q_model ORDER BY q_model",
        names,
    )
