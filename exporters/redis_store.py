"""Trust records in Redis: one hash per id with a TTL, shared by every gateway replica and worker.

For listing, each record's id also sits in sorted sets scored by its creation
time: one over every record and one per owner (the name of the key that
asked). Both are trimmed on every write to the records' TTL and to
``max_records``, so the index never outgrows the records it points at; an id
whose hash has expired in between is skipped when read.

A user's feedback is a field of its own beside the record's JSON (writing the
record again keeps it), and its id sits in a sorted set per model group scored
by when it was labelled: what the per-model fit reads, newest label first. A
set names the model groups that have such an index, so that counting every
model's labels never scans the keyspace.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import cast

import orjson
from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.exceptions import WatchError

from scoring import (
    FEEDBACK_STATUSES,
    Feedback,
    FeedbackRefused,
    Labelled,
    RecordScope,
    StoreUnavailable,
    TrustRecord,
    redis_reachable,
)

from .record_query import Position, RecordPage, RecordQuery, encode_cursor, record_matches
from .record_size import stored_json, stored_record
from .record_summary import MAX_SUMMARY_RECORDS, LabelCount, SummaryRow, TrustSummary, summarize

__all__ = ["RedisRecordStore", "record_key"]

# A filtered page reads at most this many index entries, then hands back a cursor with what it found,
# so a selective filter over a large store costs bounded time per request.
SCAN_LIMIT = 5_000
_BATCH = 200
_SUMMARY_BATCH = 2_000
_STORED = ("record", "feedback")  # a record's hash fields that make the TrustRecord a reader gets
_FEEDBACK_TRIES = 5  # a label retried when its record changed under it (a concurrent write); then "unavailable"


def record_key(prefix: str, record_id: str) -> str:
    return f"{prefix}:record:{record_id}"


class RedisRecordStore:
    def __init__(
        self, redis: Redis, *, prefix: str, ttl_s: int, max_record_bytes: int = 64 * 1024, max_records: int = 1_000_000
    ) -> None:
        self._redis = redis
        self._prefix = prefix
        self._ttl_s = ttl_s
        self._max_record_bytes = max_record_bytes
        self._max_records = max_records

    def _index_key(self, owner: str | None) -> str:
        return f"{self._prefix}:records-by-time" + ("" if owner is None else f":owner:{owner}")

    def _labelled_key(self, model: str, by: str | None = None) -> str:
        return f"{self._prefix}:labelled:{model}" + ("" if by is None else f":by:{by}")

    @property
    def _labelled_models_key(self) -> str:
        return f"{self._prefix}:labelled-models"

    async def put(self, record: TrustRecord) -> None:
        key = record_key(self._prefix, record.id)
        indexes = [self._index_key(None)] + ([self._index_key(record.owner)] if record.owner is not None else [])
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(
                key,
                mapping={
                    "status": record.status,
                    "record": stored_json(record, self._max_record_bytes),
                    "row": orjson.dumps(list(SummaryRow.of(record))),
                },
            )
            pipe.expire(key, self._ttl_s)
            for index in indexes:
                pipe.zadd(index, {record.id: record.created_at})
                pipe.zremrangebyscore(index, "-inf", f"({record.created_at - self._ttl_s}")
                pipe.zremrangebyrank(index, 0, -self._max_records - 1)
                pipe.expire(index, self._ttl_s)
            await pipe.execute()

    async def get(self, record_id: str, *, scope: RecordScope) -> TrustRecord | None:
        """The record, if it exists and ``scope`` may read it; None alike for both misses (no oracle for ids).

        StoreUnavailable when Redis cannot be reached: "retry later", not "no such record".
        """
        with redis_reachable():
            raw, feedback = await self._redis.hmget(record_key(self._prefix, record_id), _STORED)
        if not raw:
            return None
        record = stored_record(raw, feedback)
        return record if scope.allows(record) else None

    async def set_feedback(self, record_id: str, feedback: Feedback, *, scope: RecordScope) -> Labelled | None:
        """Label the record if ``scope`` may read it, in a transaction that fails should the record change
        (or expire) between the check and the write; it is then read and checked again."""
        key = record_key(self._prefix, record_id)
        with redis_reachable():
            for _ in range(_FEEDBACK_TRIES):
                async with self._redis.pipeline(transaction=True) as pipe:
                    await pipe.watch(key)
                    raw, before = await pipe.hmget(key, _STORED)
                    record = stored_record(raw, before) if raw else None
                    if record is None or not scope.allows(record):
                        return None
                    if record.status not in FEEDBACK_STATUSES:
                        raise FeedbackRefused(record.status)
                    pipe.multi()
                    pipe.hset(key, "feedback", feedback.model_dump_json())
                    if record.model is not None:
                        self._index_labelled(pipe, record.model, feedback, record_id, record.feedback)
                    try:
                        await pipe.execute()
                    except WatchError:
                        continue
                    previous, record.feedback = record.feedback, feedback
                    return Labelled(record, previous)
        raise StoreUnavailable(f"trust record kept changing while labelled ({_FEEDBACK_TRIES} tries)")

    def _index_labelled(
        self, pipe: Pipeline, model: str, feedback: Feedback, record_id: str, previous: Feedback | None
    ) -> None:
        """The model's label index, and its index of the labels one key gave (what a refit reads of its
        teachers: a record leaves its previous labeller's when another key relabels it), each trimmed like the
        time index: a label older than the TTL is on an expired record (a record is labelled after it was
        written); and the set of labelled models, which the calibration listing reads."""
        if previous is not None and previous.by and previous.by != feedback.by:
            pipe.zrem(self._labelled_key(model, previous.by), record_id)
        for index in (self._labelled_key(model), *([self._labelled_key(model, feedback.by)] if feedback.by else [])):
            pipe.zadd(index, {record_id: feedback.labelled_at})
            pipe.zremrangebyscore(index, "-inf", f"({feedback.labelled_at - self._ttl_s}")
            pipe.zremrangebyrank(index, 0, -self._max_records - 1)
            pipe.expire(index, self._ttl_s)
        pipe.sadd(self._labelled_models_key, model)
        pipe.expire(self._labelled_models_key, self._ttl_s)

    async def _labels(self, model: str, limit: int, by: frozenset[str] | None) -> list[tuple[str | None, str | None]]:
        """The model's labelled records' fields (record, feedback), newest label first; None where expired."""
        ids = await self._labelled_ids(model, limit, by)
        found: list[tuple[str | None, str | None]] = []
        for start in range(0, len(ids), _BATCH):
            async with self._redis.pipeline(transaction=False) as pipe:
                for record_id in ids[start : start + _BATCH]:
                    pipe.hmget(record_key(self._prefix, record_id), _STORED)
                found += [(raw, feedback) for raw, feedback in await pipe.execute()]
        return found

    async def label_counts(self, *, by: frozenset[str] | None = None) -> list[LabelCount]:
        """Each labelled model's labels on records still stored (an id whose record expired is not counted)."""
        counts = []
        with redis_reachable():
            models = sorted(cast(set[str], await self._redis.smembers(self._labelled_models_key)))
            for model in models:
                found = await self._labels(model, self._max_records, by)
                labels = [Feedback.model_validate_json(feedback) for raw, feedback in found if raw and feedback]
                labels = [label for label in labels if by is None or label.by in by]
                if labels:
                    counts.append(LabelCount(model, len(labels), sum(label.correct for label in labels)))
        return counts

    async def labelled(self, model: str, limit: int = 10_000, *, by: frozenset[str] | None = None) -> list[TrustRecord]:
        """Newest label first; an id whose record has expired since is skipped."""
        with redis_reachable():
            found = await self._labels(model, limit, by)
        return [stored_record(raw, feedback) for raw, feedback in found if raw and feedback]

    async def _labelled_ids(self, model: str, limit: int, by: frozenset[str] | None) -> list[str]:
        """The newest ``limit`` labelled ids of ``model`` (given by one of ``by``), newest first."""
        if by is None:
            return cast(list[str], await self._redis.zrevrange(self._labelled_key(model), 0, limit - 1))
        async with self._redis.pipeline(transaction=False) as pipe:
            for name in sorted(by):
                pipe.zrevrange(self._labelled_key(model, name), 0, limit - 1, withscores=True)
            replies = cast(list[list[tuple[str, float]]], await pipe.execute())  # decode_responses
        newest = sorted({(at, record_id) for reply in replies for record_id, at in reply}, reverse=True)
        return list(dict.fromkeys(record_id for _, record_id in newest))[:limit]

    async def _newest_first(
        self,
        owner: str | None,
        since: float | None,
        until: float | None,
        after: Position | None,
        limit: int,
        batch: int,
    ) -> AsyncIterator[tuple[Position, TrustRecord | None]]:
        """Up to ``limit`` index entries, newest first, strictly after ``after``, with their records (None: expired).

        Records are read ``batch`` at a time, the batch doubling up to ``_BATCH``: an unfiltered page reads
        about as many records as it returns, a selective filter soon reads them in bulk.
        """
        high: float | str = "+inf" if until is None else f"({until}"
        if after is not None and (until is None or after[0] < until):
            high = after[0]
        low: float | str = "-inf" if since is None else since
        offset, seen = 0, 0
        while seen < limit:
            reply = await self._redis.zrevrangebyscore(
                self._index_key(owner), high, low, start=offset, num=batch, withscores=True
            )
            entries = cast(list[tuple[str, float]], reply)  # decode_responses
            batch = min(2 * batch, _BATCH)
            if not entries:
                return
            offset += len(entries)
            positions = [(float(score), str(member)) for member, score in entries]
            if after is not None:  # ties with the cursor's time: only ids after it (ids descend within a time)
                positions = [p for p in positions if p < after]
            positions = positions[: limit - seen]
            seen += len(positions)
            async with self._redis.pipeline(transaction=False) as pipe:
                for _, record_id in positions:
                    pipe.hmget(record_key(self._prefix, record_id), _STORED)
                replies = await pipe.execute()
            for position, (raw, feedback) in zip(positions, replies, strict=True):
                yield position, stored_record(raw, feedback) if raw else None

    async def list_records(self, query: RecordQuery, *, scope: RecordScope) -> RecordPage:
        """One page of the records ``scope`` may read that match ``query``, newest first.

        A page may hold fewer than ``limit`` records and still carry a cursor:
        the scan stopped at ``SCAN_LIMIT`` entries; the next page goes on from there.
        """
        found: list[TrustRecord] = []
        last: Position | None = None
        scanned = 0
        with redis_reachable():
            async for position, record in self._newest_first(
                scope.owner, query.since_s, query.until_s, query.after, SCAN_LIMIT, batch=query.limit + 1
            ):
                scanned += 1
                if record is not None and scope.allows(record) and record_matches(record, query):
                    if len(found) == query.limit:  # one more match: another page follows
                        assert last is not None
                        return RecordPage(data=found, next_cursor=encode_cursor(last))
                    found.append(record)
                last = position
        stopped_early = scanned >= SCAN_LIMIT
        return RecordPage(data=found, next_cursor=encode_cursor(last) if stopped_early and last is not None else None)

    async def summary(self, *, scope: RecordScope, since: float, until: float, buckets: int) -> TrustSummary:
        """Counts over the window from each record's small ``row`` field; the records themselves stay unread."""
        with redis_reachable():
            reply = await self._redis.zrevrangebyscore(
                self._index_key(scope.owner), f"({until}", since, start=0, num=MAX_SUMMARY_RECORDS + 1
            )
            ids = cast(list[str], reply)  # decode_responses
            rows: list[SummaryRow] = []
            for start in range(0, min(len(ids), MAX_SUMMARY_RECORDS), _SUMMARY_BATCH):
                async with self._redis.pipeline(transaction=False) as pipe:
                    for record_id in ids[start : start + _SUMMARY_BATCH]:
                        pipe.hget(record_key(self._prefix, record_id), "row")
                    rows += [SummaryRow(*orjson.loads(raw)) for raw in await pipe.execute() if raw]
        return summarize(rows, since=since, until=until, buckets=buckets, truncated=len(ids) > MAX_SUMMARY_RECORDS)

    async def close(self) -> None:
        """The Redis client belongs to whoever created it."""
