"""Scoring on Redis Streams: gateways append jobs, ``trustgate worker`` processes consume them.

Delivery is at-least-once. Workers read through one consumer group; a job
whose worker died stays pending in the group and is taken over by another
worker with ``XAUTOCLAIM`` once idle for ``claim_idle_s``; a job delivered
more than ``max_attempts`` times goes to a dead-letter stream with its last
error. Scoring is idempotent per id: a job whose record is already final is
acknowledged without being scored again.

The bound is shared fairly: a key whose entries (waiting, or in a worker's
hands) make up its share of ``max_size`` already (``queue.key_share``) has its
new jobs shed, never another key's; a hash beside the streams counts each
key's entries, added with the entry and taken off as it is acknowledged.

The backlog (``stream_backlog``) is what the consumer group has yet to finish:
entries never delivered (the group's lag) plus entries delivered and not yet
acknowledged (its pending count). Gateways and workers export it as the queue
depth, so it reads the same from every replica.

Sync first (``scoring.lanes``): a sync request's job goes to its own stream
(``<prefix>:jobs:sync``) beside the async one (``<prefix>:jobs``), one consumer
group on each. A worker with a free slot takes pending sync entries to reclaim,
then new sync entries, and only then async ones; a worker whose every slot
holds a job still takes one sync entry more (its reserve), so that a sync job
never waits for async ones to finish. The bound (``max_size``) and the backlog
count both streams together. Every worker must know the sync
stream: upgrade workers before gateways.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol, cast

from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError
from redis.typing import EncodableT, FieldT

from .failures import FailureLog, describe
from .lanes import LANES, Lane, lane_of
from .queue import Process, Publish, SubmitResult, key_cap
from .request_context import working_for
from .settings import QueueSettings
from .types import RecordScope, ScoringJob, StoreUnavailable, TrustRecord

__all__ = ["NO_EVENTS", "RedisJobQueue", "RedisStreamWorker", "StreamKeys", "WorkerEvents", "stream_backlog"]

log = logging.getLogger("trustgate.scoring.redis")

# Every status but pending: a worker's record is final whether it scored the job, failed it, found
# nothing to score, or shed it (its model's scoring budget was spent).
FINAL_STATUSES = ("done", "failed", "skipped", "shed")
# How a delivery ended: scored and acknowledged; already final (a redelivery); failed and
# left for a retry; or given up and moved to the dead-letter stream.
JobOutcome = Literal["done", "duplicate", "retry", "dead_letter"]

# Backpressure, atomically: full streams shed the new job rather than trimming
# (and so losing) an old one, and so does a key holding its share of them already
# (queue.key_share): one key filling the queue sheds only its own jobs. Acknowledged
# entries are deleted, so the lengths are the backlog plus the jobs in hand; the hash
# KEYS[3] counts each key's entries alike (a worker takes one off as it acknowledges).
# KEYS[1]: the job's lane's stream; KEYS[2]: the other. ARGV: max_size, the job, its key, the key's cap.
# Returns 1: appended; 0: the queue is full; 2: the key holds its share.
_APPEND_UNLESS_FULL = """
if redis.call('XLEN', KEYS[1]) + redis.call('XLEN', KEYS[2]) >= tonumber(ARGV[1]) then return 0 end
if tonumber(redis.call('HGET', KEYS[3], ARGV[3]) or '0') >= tonumber(ARGV[4]) then return 2 end
redis.call('XADD', KEYS[1], '*', 'job', ARGV[2])
redis.call('HINCRBY', KEYS[3], ARGV[3], 1)
return 1
"""
_APPENDED: dict[int, SubmitResult] = {1: "accepted", 0: "shed", 2: "key_share"}
# A stream entry as a worker holds it: the stream it came from, its id, its fields.
Entry = tuple[str, str, dict[str, str]]
# How long a worker with every slot taken waits for a sync entry before looking at its slots again.
RESERVE_BLOCK_MS = 200


class WorkerEvents(Protocol):
    """What a worker reports as it goes (its metrics implement this; scoring never imports exporters)."""

    def job_started(self) -> None: ...
    def job_finished(self, outcome: JobOutcome, seconds: float) -> None: ...
    def jobs_reclaimed(self, count: int) -> None: ...
    def dead_lettered(self, model: str) -> None: ...
    def async_overtaken(self, count: int) -> None: ...


class _NoEvents:
    def job_started(self) -> None:
        """Nothing to report to."""

    def job_finished(self, outcome: JobOutcome, seconds: float) -> None:
        """Nothing to report to."""

    def jobs_reclaimed(self, count: int) -> None:
        """Nothing to report to."""

    def dead_lettered(self, model: str) -> None:
        """Nothing to report to."""

    def async_overtaken(self, count: int) -> None:
        """Nothing to report to."""


NO_EVENTS: WorkerEvents = _NoEvents()


class Records(Protocol):
    async def put(self, record: TrustRecord) -> None: ...
    async def get(self, record_id: str, *, scope: RecordScope) -> TrustRecord | None: ...


@dataclass(frozen=True)
class StreamKeys:
    prefix: str

    @property
    def stream(self) -> str:
        """The async lane's stream (the only one before sync jobs had their own)."""
        return f"{self.prefix}:jobs"

    @property
    def sync_stream(self) -> str:
        return f"{self.prefix}:jobs:sync"

    def stream_of(self, lane: Lane) -> str:
        return self.sync_stream if lane == "sync" else self.stream

    @property
    def streams(self) -> tuple[str, ...]:
        """Both lanes' streams, in the order a worker takes them (``scoring.lanes.LANES``)."""
        return tuple(self.stream_of(lane) for lane in LANES)

    @property
    def dead_letters(self) -> str:
        return f"{self.prefix}:jobs:dead"

    @property
    def group(self) -> str:
        return "scoring-workers"

    @property
    def errors(self) -> str:
        return f"{self.prefix}:job-errors"

    @property
    def per_key(self) -> str:
        """The hash of each key's entries in the streams (``queue.key_share``)."""
        return f"{self.prefix}:jobs:per-key"

    def done(self, job_id: str) -> str:
        return f"{self.prefix}:done:{job_id}"


async def stream_backlog(redis: Redis, keys: StreamKeys) -> int:
    """Jobs the consumer groups have not finished, both lanes together (``_lane_backlog``)."""
    return sum([await _lane_backlog(redis, keys, stream) for stream in keys.streams])


async def _lane_backlog(redis: Redis, keys: StreamKeys, stream: str) -> int:
    """Jobs one stream's consumer group has not finished: its lag (never delivered) plus its pending entries.

    Before any worker has made the group, every entry in the stream is waiting.
    Redis reports no lag when it cannot tell (entries deleted mid-range, as
    acknowledged ones are here); the stream's length is then exact, because
    finished entries are deleted and so everything left is waiting or in hand.
    """
    try:
        groups = await redis.xinfo_groups(stream)
    except ResponseError as exc:  # no stream yet: nothing was ever submitted
        if "no such key" in str(exc).lower():
            return 0
        raise
    group = next((g for g in groups if g["name"] == keys.group), None)
    if group is None or group.get("lag") is None:
        return int(await redis.xlen(stream))
    return int(group["lag"]) + int(group["pending"])


async def _undelivered(redis: Redis, keys: StreamKeys, stream: str) -> int:
    """Entries of ``stream`` no worker has taken yet: its length less its group's pending entries."""
    async with redis.pipeline(transaction=False) as pipe:
        pipe.xlen(stream)
        pipe.xpending(stream, keys.group)
        length, pending = await pipe.execute()
    return max(0, int(length) - int(pending["pending"]))


class RedisJobQueue:
    """The gateway's side: submit jobs, read pending/finished records, wait for one."""

    def __init__(
        self,
        redis: Redis,
        records: Records,
        settings: QueueSettings,
        *,
        on_error: Callable[[str], None] = lambda operation: None,
    ) -> None:
        self._redis = redis
        self._records = records
        self._settings = settings
        self._keys = StreamKeys(settings.redis_prefix)
        self._append = redis.register_script(_APPEND_UNLESS_FULL)
        self._per_key = key_cap(settings.max_size, settings.key_share)
        self._on_error = on_error  # counts Redis errors by operation ("submit", "wait")
        self._failures = FailureLog(log)

    def _failed(self, operation: str, exc: Exception) -> None:
        self._failures.report(f"redis queue {operation}", type(exc).__name__, exc)
        self._on_error(operation)

    async def start(self) -> None:
        """Nothing to start: the gateway only writes; workers consume."""

    async def stop(self) -> None:
        """Nothing to stop: jobs already appended are the workers' now."""

    async def submit(self, job: ScoringJob) -> SubmitResult:
        try:
            # The pending record goes first so that a fast worker's final record is never overwritten.
            await self._records.put(TrustRecord.for_job(job, "pending"))
            own = self._keys.stream_of(lane_of(job))
            appended = await self._append(
                keys=[own, *(s for s in self._keys.streams if s != own), self._keys.per_key],
                args=[self._settings.max_size, job.model_dump_json(), job.owner or "", self._per_key],
            )
        except RedisError as exc:
            self._failed("submit", exc)
            return "unavailable"
        return _APPENDED[int(appended)]

    async def pending(self, job_id: str) -> TrustRecord | None:
        """Records live in Redis for every replica; the store answers for pending ones too."""
        return None

    async def depth(self) -> int:
        """The stream's backlog for the workers' group (see ``stream_backlog``)."""
        return await stream_backlog(self._redis, self._keys)

    async def wait(self, job_id: str, timeout: float) -> TrustRecord | None:
        deadline = time.monotonic() + timeout
        try:
            while (remaining := deadline - time.monotonic()) > 0:
                # Short blocking pops: each stays under the client's socket timeout.
                step = min(remaining, self._settings.redis_timeout_s / 2)
                if await self._redis.blpop([self._keys.done(job_id)], timeout=step):
                    record = await self._records.get(job_id, scope=RecordScope.everyone())
                    return record if record is not None and record.status in FINAL_STATUSES else None
        except (RedisError, StoreUnavailable) as exc:  # the caller answers "pending"; the record lands later
            self._failed("wait", exc)
            return None
        return None


class RedisStreamWorker:
    """The worker's side: read, reclaim, score, publish, acknowledge — or dead-letter."""

    def __init__(
        self,
        redis: Redis,
        records: Records,
        settings: QueueSettings,
        *,
        process: Process,
        publish: Publish,
        consumer: str,
        events: WorkerEvents = NO_EVENTS,
        block_ms: int = 1000,
    ) -> None:
        self._redis = redis
        self._records = records
        self._settings = settings
        self._process = process
        self._publish = publish
        self._consumer = consumer
        self._events = events
        self._block_ms = min(block_ms, int(settings.redis_timeout_s * 500))
        self._keys = StreamKeys(settings.redis_prefix)
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._tasks: set[asyncio.Task[None]] = set()
        self._reserve: asyncio.Task[None] | None = None  # the sync entry taken beyond ``concurrency``, if any
        self._running = False
        self._redis_ok = False

    @property
    def alive(self) -> bool:
        """Liveness: the consume loop is running (it stops only when asked to, or on a bug)."""
        return self._running

    @property
    def ready(self) -> bool:
        """Readiness: consuming, and the last Redis round trip succeeded."""
        return self._running and self._redis_ok

    async def depth(self) -> int:
        return await stream_backlog(self._redis, self._keys)

    async def ensure_group(self) -> None:
        for stream in self._keys.streams:
            try:
                await self._redis.xgroup_create(stream, self._keys.group, id="0", mkstream=True)
            except ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise

    async def run(self, stop: asyncio.Event, *, grace_s: float = 30.0) -> None:
        """Consume until ``stop`` is set, then finish in-flight jobs for up to ``grace_s``.

        Jobs still running after the grace period are cancelled unacknowledged:
        they stay pending in the group and another worker reclaims them.
        """
        await self.ensure_group()
        self._running, self._redis_ok = True, True
        try:
            await self._consume(stop)
        finally:
            self._running = False
        if self._tasks:
            _, unfinished = await asyncio.wait(self._tasks, timeout=grace_s)
            for task in unfinished:
                task.cancel()
            await asyncio.gather(*unfinished, return_exceptions=True)

    async def _consume(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self._fill_slots()
                self._redis_ok = True
            except ResponseError as exc:
                if "NOGROUP" not in str(exc):
                    raise
                await self.ensure_group()  # Redis restarted empty: the group must be made again
            except RedisError as exc:
                self._redis_ok = False
                log.warning("redis unavailable (%s); retrying", type(exc).__name__)
                await asyncio.sleep(0.5)

    async def _fill_slots(self) -> None:
        reserve_busy = self._reserve is not None and not self._reserve.done()
        free = self._settings.concurrency - (len(self._tasks) - reserve_busy)
        if free <= 0:
            await self._fill_reserve(reserve_busy)
            return
        reclaimed = await self._reclaim(free)
        if reclaimed:
            self._events.jobs_reclaimed(len(reclaimed))
        for entry in reclaimed or await self._read(free):
            self._start(entry)

    async def _fill_reserve(self, busy: bool) -> None:
        """Every slot holds a job: one sync entry more may start at once (its calls go ahead of theirs)."""
        if busy:
            await asyncio.wait(self._tasks, return_when=asyncio.FIRST_COMPLETED)
            return
        for entry in await self._read_sync(1, block=min(self._block_ms, RESERVE_BLOCK_MS)):
            self._reserve = self._start(entry)

    def _start(self, entry: Entry) -> asyncio.Task[None]:
        task = asyncio.create_task(self._handle(*entry))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _reclaim(self, count: int) -> list[Entry]:
        """Entries whose worker held them past ``claim_idle_s``, the sync lane's first."""
        for stream in self._keys.streams:
            reply = await self._redis.xautoclaim(
                stream,
                self._keys.group,
                self._consumer,
                min_idle_time=round(self._settings.claim_idle_s * 1000),
                start_id="0-0",
                count=count,
            )
            entries = [(stream, entry_id, fields) for entry_id, fields in reply[1] if fields]
            if entries:
                return entries
        return []

    async def _read(self, count: int) -> list[Entry]:
        """New sync entries if any wait; otherwise whichever lane's come first, waiting up to ``block_ms``.

        Sync entries taken while async ones wait are counted (``async_overtaken``).
        In the rare race where both lanes answer the blocking read, a worker holds
        up to twice ``count`` entries for a moment: none is left unread.
        """
        entries = await self._read_sync(count, block=None)
        return entries or await self._read_streams(list(self._keys.streams), count, block=self._block_ms)

    async def _read_sync(self, count: int, *, block: int | None) -> list[Entry]:
        """New sync entries, counting the async ones they pass (``async_overtaken``)."""
        entries = await self._read_streams([self._keys.sync_stream], count, block=block)
        if entries:
            waiting = await _undelivered(self._redis, self._keys, self._keys.stream)
            if waiting:
                self._events.async_overtaken(waiting * len(entries))
        return entries

    async def _read_streams(self, streams: list[str], count: int, *, block: int | None) -> list[Entry]:
        reply = await self._redis.xreadgroup(
            self._keys.group, self._consumer, dict.fromkeys(streams, ">"), count=count, block=block
        )
        read = cast(list[tuple[str, list[tuple[str, dict[str, str]]]]], reply or [])  # decode_responses
        by_stream = dict(read)
        return [(stream, entry_id, fields) for stream in streams for entry_id, fields in by_stream.get(stream, [])]

    async def _deliveries(self, stream: str, entry_id: str) -> int:
        pending = await self._redis.xpending_range(stream, self._keys.group, min=entry_id, max=entry_id, count=1)
        return int(pending[0]["times_delivered"]) if pending else 1

    async def _handle(self, stream: str, entry_id: str, fields: dict[str, str]) -> None:
        self._events.job_started()
        started = time.perf_counter()
        outcome: JobOutcome = "retry"
        try:
            outcome = await self._deliver(stream, entry_id, fields)
        finally:
            self._events.job_finished(outcome, time.perf_counter() - started)

    async def _deliver(self, stream: str, entry_id: str, fields: dict[str, str]) -> JobOutcome:
        try:
            job = ScoringJob.model_validate_json(fields["job"])
        except (KeyError, ValueError):
            await self._dead_letter(entry_id, fields, "malformed job entry", attempts=1)
            await self._ack(stream, entry_id)
            self._events.dead_lettered("unknown")
            return "dead_letter"
        with working_for(job.request_id):  # its lines name the request whose answer it scores
            return await self._score(stream, entry_id, fields, job)

    async def _score(self, stream: str, entry_id: str, fields: dict[str, str], job: ScoringJob) -> JobOutcome:
        try:
            existing = await self._records.get(job.id, scope=RecordScope.everyone())
            if existing is not None and existing.status in FINAL_STATUSES:
                await self._ack(stream, entry_id, owner=job.owner or "")  # a retried delivery of a job already scored
                return "duplicate"
            attempts = await self._deliveries(stream, entry_id)
            if attempts > self._settings.max_attempts:
                await self._give_up(stream, entry_id, fields, job, attempts)
                return "dead_letter"
            record = await self._process(job)
            await self._publish(record)
            await self._ack(stream, entry_id, job.id, owner=job.owner or "")
            return "done"
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # left unacknowledged: reclaimed and retried after claim_idle_s
            log.warning("scoring job %s failed: %s", entry_id, describe(exc))
            with contextlib.suppress(RedisError):
                await self._redis.hset(self._keys.errors, job.id, f"{type(exc).__name__}: {exc}"[:500])
            return "retry"

    async def _ack(self, stream: str, entry_id: str, job_id: str | None = None, *, owner: str | None = None) -> None:
        """Acknowledge and delete the entry (its key holds one entry less; ``owner`` None: an entry no gateway
        appended, which no key's count holds); ``job_id``: wake whoever waits for its record."""
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.xack(stream, self._keys.group, entry_id)
            pipe.xdel(stream, entry_id)
            if owner is not None:
                pipe.hincrby(self._keys.per_key, owner, -1)
            if job_id is not None:
                pipe.rpush(self._keys.done(job_id), "1")
                pipe.expire(self._keys.done(job_id), 300)
                pipe.hdel(self._keys.errors, job_id)
            await pipe.execute()

    async def _give_up(
        self, stream: str, entry_id: str, fields: dict[str, str], job: ScoringJob, attempts: int
    ) -> None:
        recorded = await self._redis.hget(self._keys.errors, job.id)
        error = recorded if isinstance(recorded, str) and recorded else "unknown error"
        await self._dead_letter(entry_id, fields, error, attempts=attempts)
        await self._publish(
            TrustRecord.for_job(job, "failed", error=f"dead-lettered after {attempts - 1} attempts: {error}")
        )
        self._events.dead_lettered(job.model)
        await self._ack(stream, entry_id, job.id, owner=job.owner or "")

    async def _dead_letter(self, entry_id: str, fields: dict[str, str], error: str, *, attempts: int) -> None:
        entry: dict[FieldT, EncodableT] = dict(fields.items())
        entry.update(error=error, attempts=str(attempts), entry_id=entry_id)
        await self._redis.xadd(self._keys.dead_letters, entry, maxlen=self._settings.max_size, approximate=True)
