"""Listing trust records: the filters a reader may apply, an opaque cursor, one page of results.

Both stores answer the same ``RecordQuery`` with the same ``RecordPage``,
newest first (by ``created_at``, then id). A cursor names the last record of
the page it ended; the next page starts strictly after it. Records written
meanwhile are newer and sort before the cursor, so paging never repeats or
skips a record that was there when the first page was read.
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from scoring import TrustRecord, TrustStatus

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "Position",
    "RecordPage",
    "RecordQuery",
    "decode_cursor",
    "encode_cursor",
    "record_matches",
    "record_value",
]

DEFAULT_LIMIT = 50
MAX_LIMIT = 200

TrustLabel = Literal["trusted", "uncertain", "untrusted", "unknown"]
# "score" is the record's overall score (Trust_OV, or the best available component).
ScoreField = Literal["score", "bc", "fc", "ov", "rag"]

Position = tuple[float, str]  # (created_at, id) of a record: where a page ended


def encode_cursor(position: Position) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(list(position))).decode().rstrip("=")


def decode_cursor(cursor: str) -> Position:
    """The position a cursor names; ValueError for anything this module did not write."""
    try:
        raw = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, orjson.JSONDecodeError, ValueError) as exc:
        raise ValueError("cursor is not one this endpoint returned") from exc
    if (
        not isinstance(raw, list)
        or len(raw) != 2
        or not isinstance(raw[0], int | float)
        or isinstance(raw[0], bool)
        or not isinstance(raw[1], str)
    ):
        raise ValueError("cursor is not one this endpoint returned")
    return float(raw[0]), raw[1]


def _timestamp(value: datetime | None) -> float | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


class RecordQuery(BaseModel):
    """What a reader asks for: every filter optional, combined with AND; times are ISO 8601 or Unix seconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = Field(default=None, min_length=1, max_length=256)
    label: TrustLabel | None = None
    status: TrustStatus | None = None
    # min_score / max_score bound the value of ``score_of`` (inclusive); a record without that value never matches.
    score_of: ScoreField = "score"
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    max_score: float | None = Field(default=None, ge=0.0, le=1.0)
    since: datetime | None = None  # created at or after
    until: datetime | None = None  # created before
    has_error: bool | None = None
    labelled: bool | None = None  # True: only records with a user's feedback; False: only those without
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    cursor: str | None = Field(default=None, max_length=1024)

    @field_validator("cursor")
    @classmethod
    def _cursor_is_ours(cls, value: str | None) -> str | None:
        if value is not None:
            decode_cursor(value)
        return value

    @model_validator(mode="after")
    def _ranges_are_ordered(self) -> RecordQuery:
        if self.min_score is not None and self.max_score is not None and self.min_score > self.max_score:
            raise ValueError("min_score must not exceed max_score")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError("since must be before until")
        return self

    @property
    def after(self) -> Position | None:
        return decode_cursor(self.cursor) if self.cursor is not None else None

    @property
    def since_s(self) -> float | None:
        return _timestamp(self.since)

    @property
    def until_s(self) -> float | None:
        return _timestamp(self.until)


class RecordPage(BaseModel):
    """One page, newest first; ``next_cursor`` is None on the last page."""

    data: list[TrustRecord]
    next_cursor: str | None = None


def record_value(record: TrustRecord, field: ScoreField) -> float | None:
    if field == "score":
        return record.score
    component = record.components.get(field)
    return component.value if component is not None else None


def record_matches(record: TrustRecord, query: RecordQuery) -> bool:
    """The query's filters applied to one record (the cursor and the limit are the store's business)."""
    value = record_value(record, query.score_of)
    since, until = query.since_s, query.until_s
    return (
        (query.model is None or record.model == query.model)
        and (query.label is None or record.label == query.label)
        and (query.status is None or record.status == query.status)
        and (query.has_error is None or (record.error is not None) == query.has_error)
        and (query.labelled is None or (record.feedback is not None) == query.labelled)
        and (query.min_score is None or (value is not None and value >= query.min_score))
        and (query.max_score is None or (value is not None and value <= query.max_score))
        and (since is None or record.created_at >= since)
        and (until is None or record.created_at < until)
    )
