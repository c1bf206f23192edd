"""The daemon's pop of a state or queue table, such that no popped change is lost.

One object per table, with one job: move changes from the table's Redis channel into the table's
pending map so that each stays durable in Redis until its task is done. It owns

- the in-flight record `_SWSSD_INFLIGHT:<instance>:<TABLE>`, a hash the pop script appends each
  popped batch to, in the same call that pops it (field = the batch's sequence number from HINCRBY
  of the field `seq`, value = the batch as JSON). Batches older than every task not yet done
  (`PendingMap.low_water()`) are removed in batches, at most every `clear_delay` seconds; when a
  task held back (Retry) keeps more than `compact_after` batches alive, they are replaced by one
  snapshot of the whole pending map, stored under the oldest of them, so replaying the record in
  sequence order still applies everything in the order it happened;
- recovery: a pop whose reply was lost (its connection dropped after Redis ran it) left its
  batch in the record; every reply says the newest sequence number, and batches newer than the
  last one handed over are read back before anything else. At start, take_over() hands over
  what a previous run of the same instance left (a crash, or tasks shutdown could not finish);
- a record that started over: Redis lost its data (restarted without persistence, flushed) or
  someone deleted the record, so the counter restarted below the numbers handed over. Seen in a
  pop reply or at a read-back, the batches remembered are forgotten (Redis no longer has them;
  the tasks of them not done yet still run, held by nothing in Redis) and numbering starts again
  from the new record's: lost replies are read back, finished batches cleared and a compaction
  stored in order as before (a numbering mixing both records once left a batch already handled
  in the record, to be handed over again by the next start after newer ones had been cleared).
  Removing and compacting go through one script (inflight_clear.lua) that touches a batch only
  while it holds what was handed over (its SHA1): a removal sent before the loss and re-sent
  after it once deleted the new record's batches of the same numbers;
- prefetch: after a batch that left more data behind, the next PREFETCH_DEPTH pops are kept in
  flight: they run in Redis while the daemon handles this batch, and Redis has the next one to run
  while a reply travels back; settle() hands them over at shutdown;
- entries the script sets aside (malformed ops, wrong-type keys): counted and logged with a bounded
  excerpt; the records stay on the list `_SWSSD_DEAD:<instance>:<TABLE>` (the newest `DEAD_CAP`).

After a crash a task may be handed to its handler again (at-least-once); none is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

import structlog
from redis.exceptions import RedisError, ResponseError

from ..backoff import Backoff
from ..channels.consumer_base import Prefetched, await_oldest
from ..channels.consumer_state_table import ConsumerStateTable
from ..channels.consumer_table import ConsumerTable
from ..fields import DEL_COMMAND, KeyOpFieldsValues
from ..lua import CST_POPS_RELIABLE, CT_POPS_RELIABLE, INFLIGHT_CLEAR
from .crash_guard import BLAMED_FIELD, DEFAULT_LIMIT, HANDLER_FIELD, CrashGuard
from .own_keys import set_aside
from .pending import PendingMap

#: seconds between attempts to clear the record while Redis fails them, at most
_CLEAR_RETRY_MAX = 2.0
#: lost replies read back by number; a larger jump of the counter lists the record's fields
_READ_BACK_SPAN = 1024

log = structlog.get_logger("swssd.daemon")

#: Records kept on a table's dead-letter list (the newest).
DEAD_CAP = 1000
#: Bytes of a value kept in a set-aside record and in its log line.
EXCERPT = 512
#: The in-flight hash's field holding the last sequence number given out.
SEQ_FIELD = "seq"
#: The field earlier versions counted crashed starts in (every task taken over blamed); read as
#: nothing and removed: crash_guard.py blames only what was in a handler.
OLD_TAKEOVERS_FIELD = "takeovers"
#: The record's fields that are no batch.
_NOT_BATCHES = (SEQ_FIELD, HANDLER_FIELD, BLAMED_FIELD, OLD_TAKEOVERS_FIELD)
#: Pops kept in flight while a table has more data. With one, Redis waits while each reply travels
#: back and the daemon sends the next pop (a fifth of a queue drain's time, BENCHMARKS.md); a
#: second pop already queued behind it fills that wait. Each batch is in the record: nothing more
#: is at risk for a deeper prefetch, only the order of replies, which one connection keeps.
PREFETCH_DEPTH = 2


def inflight_key(instance: str, table: str) -> str:
    """The in-flight record of `table` for daemon instance `instance`."""
    return f"_SWSSD_INFLIGHT:{instance}:{table}"


def dead_key(instance: str, table: str) -> str:
    """Where `table`'s set-aside entries are kept for inspection."""
    return f"_SWSSD_DEAD:{instance}:{table}"


class Batch(NamedTuple):
    """Tasks popped together, and their batch's sequence number in the in-flight record."""

    seq: int
    tasks: list[KeyOpFieldsValues]


class ReliablePop:
    """Pops one state (`ConsumerStateTable`, tracked deletes) or queue (`ConsumerTable`) table
    through swssd's reliable pop scripts into `pending`. See the module docstring."""

    def __init__(
        self,
        consumer: ConsumerStateTable | ConsumerTable,
        pending: PendingMap,
        *,
        instance: str,
        compact_after: int = 256,
        clear_delay: float = 0.05,
        on_set_aside: Callable[[int], None] = lambda n: None,
        crash_limit: int = DEFAULT_LIMIT,
    ) -> None:
        self.consumer = consumer
        self.pending = pending
        self.db = consumer.db
        self.table = consumer.name
        self.record = inflight_key(instance, consumer.name)
        self.dead = dead_key(instance, consumer.name)
        self.compact_after = compact_after
        self.clear_delay = clear_delay
        self._on_set_aside = on_set_aside
        #: which keys are in a handler, for the next start after an abnormal end
        self.guard = CrashGuard(self.db, self.record, self.table, crash_limit)
        if isinstance(consumer, ConsumerStateTable):
            consumer.track_deletes = True
            self._script = CST_POPS_RELIABLE
            self._keys = [
                consumer.key_set, consumer.name + consumer.separator, consumer.del_set, self.record, self.dead,
            ]
            self._args: list[str | int] = [consumer.pop_batch_size, consumer.state_prefix, DEAD_CAP, EXCERPT]
            self._encode: Callable[[list[KeyOpFieldsValues]], str] = _encode_state
        else:
            self._script = CT_POPS_RELIABLE
            self._keys = [consumer.op_queue, consumer.name, self.record, self.dead]
            self._args = [consumer.pop_batch_size, 1 if consumer.modify_redis else 0, DEAD_CAP, EXCERPT]
            self._encode = _encode_queue
        #: the newest sequence number handed over (or found at take-over)
        self.last_seq = 0
        #: sequence numbers of the batches in the record, oldest first
        self._kept: deque[int] = deque()
        #: SHA1 of each kept batch as the record holds it: what a removal may remove
        self._digests: dict[int, str] = {}
        #: times the record was found started over (Redis lost it): a clear or compaction begun
        #: before leaves the new record's numbering alone
        self.restarts = 0
        self._prefetch: Prefetched = deque()
        #: a pop failed: Redis may have run it, so the record is read before popping again
        self._unsure = False
        self._progress = asyncio.Event()
        self._clearer: asyncio.Task[None] | None = None
        #: batches read back from the record after their reply was lost
        self.recovered = 0
        #: tasks take_over() set aside instead of handing them over (crash_guard.py)
        self.poisoned: list[KeyOpFieldsValues] = []
        self.compactions = 0

    # -- start --------------------------------------------------------------------------

    async def take_over(self) -> list[Batch]:
        """What an earlier run of this instance left in the record, oldest first: hand it to the
        pending map before popping (and before reconcile). Starts the clearing task. A record
        that cannot be read (not a hash, a field that is no batch) is set aside, and what of it
        could be read is kept in a new record (own_keys.py).

        Tasks of keys that were in a handler at each of the last `crash_limit` abnormal ends
        (crash_guard.py) are removed from the record instead and left in `poisoned`, for the
        caller to set aside."""
        try:
            raw = {str(f): str(v) for f, v in (await self.db.redis.hgetall(self.record)).items()}
        except ResponseError as exc:
            if "WRONGTYPE" not in str(exc):
                raise
            await set_aside(self.db, self.record, "wrong-type", str(exc))
            raw = {}
        last_seq, batches, problems = self._read_record(raw)
        aside, guard_problems = self.guard.judge(raw)
        if problems or guard_problems:
            await set_aside(self.db, self.record, "malformed", "; ".join(problems + guard_problems))
            fields = [x for seq, _tasks in batches for x in (str(seq), raw[str(seq)])]
            await self.db.redis.hset(self.record, items=[SEQ_FIELD, str(last_seq), *fields])
        elif OLD_TAKEOVERS_FIELD in raw:
            await self.db.redis.hdel(self.record, OLD_TAKEOVERS_FIELD)
        digests = {b.seq: _digest(raw[str(b.seq)]) for b in batches}
        self.last_seq = last_seq
        if aside:
            batches = await self._remove_keys(batches, aside, digests)
        await self.guard.started()
        self._kept.extend(b.seq for b in batches)
        self._digests.update((b.seq, digests[b.seq]) for b in batches)
        if batches:
            self._progress.set()
        self.start()
        return batches

    async def _remove_keys(self, batches: list[Batch], keys: set[str], digests: dict[int, str]) -> list[Batch]:
        """The batches without the tasks of `keys`, which go to `poisoned` (and to the record's
        dead-letter list, with the reason); the record (and `digests`) is rewritten to match."""
        kept: list[Batch] = []
        for batch in batches:
            tasks = [t for t in batch.tasks if t.key not in keys]
            if len(tasks) == len(batch.tasks):
                kept.append(batch)
                continue
            self.poisoned += [t for t in batch.tasks if t.key in keys]
            if tasks:
                text = self._encode(tasks)
                await self.db.redis.hset(self.record, str(batch.seq), text)
                digests[batch.seq] = _digest(text)
                kept.append(Batch(batch.seq, tasks))
            else:
                await self.db.redis.hdel(self.record, str(batch.seq))
        if self.poisoned:
            reason = crash_reason(self.guard.limit)
            records = [json.dumps({"key": t.key, "op": t.op, "value": json.dumps(t.fvs, ensure_ascii=False),
                                   "reason": reason}, ensure_ascii=False) for t in self.poisoned]
            await self.db.redis.rpush(self.dead, *records)
            await self.db.redis.ltrim(self.dead, -DEAD_CAP, -1)
        return kept

    def _read_record(self, raw: dict[str, str]) -> tuple[int, list[Batch], list[str]]:
        """The record's last sequence number, its readable batches in order, and what is wrong."""
        problems: list[str] = []
        seq_text = raw.get(SEQ_FIELD) or "0"
        last_seq = int(seq_text) if _is_seq(seq_text) else 0
        if not _is_seq(seq_text):
            problems.append(f"{SEQ_FIELD} is {seq_text[:40]!r}, not a sequence number")
        batches: list[Batch] = []
        for field, value in raw.items():
            if field in _NOT_BATCHES:
                continue
            if not _is_seq(field):
                problems.append(f"field {field[:40]!r} is not a batch number")
                continue
            try:
                batches.append(Batch(int(field), self._parse(value)))
            except Exception as exc:  # anything at all may have been written there
                problems.append(f"batch {field} is not a batch: {type(exc).__name__}: {str(exc)[:80]}")
        batches.sort(key=lambda b: b.seq)
        return max([last_seq, *(b.seq for b in batches)]), batches, problems

    def start(self) -> None:
        """Start the task that removes finished batches from the record."""
        if self._clearer is None:
            self._clearer = asyncio.ensure_future(self._clear_loop())

    # -- popping ------------------------------------------------------------------------

    async def pop(self) -> list[Batch]:
        """The next batch, or the batches whose reply was lost after a failed pop; raises what
        Redis raised (the batch, if Redis ran the pop, is read back by the next call)."""
        try:
            if self._unsure:
                return await self._recover()
            if self._prefetch:
                started = self._prefetch[0][0]
                reply = await await_oldest(self._prefetch)
            else:
                started = self.consumer.pop_started()
                reply = await self._send()
        except ResponseError:
            raise  # refused (the script checks before it changes anything): nothing was popped
        except (RedisError, OSError):
            self._unsure = True
            raise
        more = bool(reply[1])
        if more:
            # Sent before this batch is parsed and handed over: Redis runs them meanwhile.
            while len(self._prefetch) < PREFETCH_DEPTH:
                self._prefetch.append((self.consumer.pop_started(), asyncio.ensure_future(self._send())))
            await asyncio.sleep(0)  # the tasks' first steps write the pops: before the parse, not after
        # ready until every pop sent ahead is handed over
        self.consumer.pop_finished(started, more or bool(self._prefetch))
        try:
            return await self._hand_over(reply)
        except ResponseError:
            raise
        except (RedisError, OSError):
            self._unsure = True  # this batch is in the record: read back with the prefetched one
            raise

    async def settle(self) -> list[Batch]:
        """At shutdown: the batches the prefetched pops took, in order, or what failed pops left
        in the record."""
        if self._unsure:
            return await self._recover()
        if self._prefetch:  # every reply first: a cancellation while waiting loses nothing
            await asyncio.wait([task for _, task in self._prefetch])
        out: list[Batch] = []
        while self._prefetch:
            # Done replies, in order, each right after the one before it: no read-back, so nothing
            # suspends between the hand-overs, and a cancellation cannot drop a batch kept here.
            try:
                out += await self._hand_over(await await_oldest(self._prefetch))
            except ResponseError:
                if not out:
                    raise
                break  # refused: it popped nothing; what was handed over goes to the caller
            except (RedisError, OSError):
                self._unsure = True
                if not out:
                    raise
                break  # what Redis ran of the rest is in the record, for the next start
        return out

    async def _recover(self) -> list[Batch]:
        """After a failed pop: the batches Redis recorded beyond the last one handed over
        (a prefetched pop still out ends first: what it took is read back with the rest)."""
        while self._prefetch:
            with contextlib.suppress(RedisError, OSError):
                reply = await await_oldest(self._prefetch)
                if reply[2] and reply[0] <= self.last_seq:
                    self._started_over(reply[0])
        newest = int(await self.db.redis.hget(self.record, SEQ_FIELD) or 0)
        if newest < self.last_seq:
            self._started_over(newest)
        out = await self._read_back(newest)
        self._unsure = False
        self.consumer.notify()  # look again: the failed pop may not have run at all
        return out

    async def _hand_over(self, reply: list[Any]) -> list[Batch]:
        """The batches of one pop reply: any lost before it (a gap in the sequence), then its own."""
        seq, _more, entries, set_aside = reply
        if set_aside:
            self._set_aside(set_aside)
        if seq < self.last_seq or (entries and seq == self.last_seq):  # a new batch's number is new
            self._started_over(seq)
        if not entries:
            return await self._read_back(seq)
        tasks = self._parse(entries)  # the batch's JSON text, as the record keeps it
        out = await self._read_back(seq - 1)
        out.append(self._keep(seq, tasks, entries))
        return out

    async def _send(self) -> list[Any]:
        # Never resent on a dropped connection: Redis may have run it (then the record has it).
        return await self.db.evalsha(self._script, self._keys, self._args, resend=False)  # type: ignore[no-any-return]

    async def _read_back(self, newest: int) -> list[Batch]:
        """Batches after the last one handed over, up to `newest`: pops whose reply was lost.
        Nothing changes here until the read succeeded. A jump of the counter larger than any
        number of lost replies (someone wrote `seq`) reads the record's fields, not the range."""
        if newest <= self.last_seq:
            return []
        if newest - self.last_seq <= _READ_BACK_SPAN:
            seqs = list(range(self.last_seq + 1, newest + 1))
        else:
            fields = [str(f) for f in await self.db.redis.hkeys(self.record)]
            seqs = sorted(int(f) for f in fields if _is_seq(f) and self.last_seq < int(f) <= newest)
        values = await self.db.redis.hmget(self.record, [str(s) for s in seqs]) if seqs else []
        out: list[Batch] = []
        for seq, value in zip(seqs, values):
            if value is None:
                continue
            try:
                tasks = self._parse(value)
            except Exception as exc:  # not a batch a pop wrote: leave it, say so
                log.error("in-flight batch unreadable; left in the record", db=self.db.name, table=self.table,
                          key=self.record, seq=seq, error=f"{type(exc).__name__}: {str(exc)[:80]}")
                continue
            self.recovered += 1
            batch = self._keep(seq, tasks, value)
            log.warning("pop recovered", db=self.db.name, table=self.table, seq=seq, tasks=len(batch.tasks))
            out.append(batch)
        self.last_seq = max(self.last_seq, newest)
        return out

    def _started_over(self, seq: int) -> None:
        """The record's counter went back (to `seq`): the record was lost, the batches remembered
        with it; number from the new record's on."""
        log.warning("in-flight record started over (Redis lost its data, or the record was deleted): tasks "
                    "popped before are no longer kept in Redis; numbering from the new record on",
                    db=self.db.name, table=self.table, key=self.record, last_seq=self.last_seq, seq=seq)
        self.restarts += 1
        self._kept.clear()
        self._digests.clear()
        self.pending.rebase(None)
        self.last_seq = 0

    def _keep(self, seq: int, tasks: list[KeyOpFieldsValues], text: str | bytes) -> Batch:
        self._kept.append(seq)
        self._digests[seq] = _digest(text)
        self.last_seq = max(self.last_seq, seq)
        return Batch(seq, tasks)

    def _parse(self, value: str | bytes) -> list[KeyOpFieldsValues]:
        return self.consumer.parse(json.loads(value))

    def _set_aside(self, records: list[str]) -> None:
        self._on_set_aside(len(records))
        for raw in records:
            try:
                record = json.loads(raw)
            except ValueError:
                record = {"value": raw[:EXCERPT]}
            log.error(
                "entry set aside: not a valid change", db=self.db.name, table=self.table,
                key=str(record.get("key", ""))[:EXCERPT], op=str(record.get("op", ""))[:EXCERPT],
                value=str(record.get("value", ""))[:EXCERPT], reason=record.get("reason"), kept_in=self.dead,
            )

    # -- clearing -----------------------------------------------------------------------

    def progress(self) -> None:
        """Tasks were done: finished batches may be removed (soon, together with others)."""
        if self._kept:
            self._progress.set()

    async def _clear_loop(self) -> None:
        backoff = Backoff(self.clear_delay, _CLEAR_RETRY_MAX)
        delay = self.clear_delay
        while True:
            await self._progress.wait()
            await asyncio.sleep(delay)
            self._progress.clear()
            try:
                await self.clear()
                backoff.reset()
                delay = self.clear_delay
            except (RedisError, OSError):
                self._progress.set()  # try again; the pops report the outage
                delay = backoff.next()

    async def clear(self) -> None:
        """Remove the batches no task still needs; compact the record when it keeps too many."""
        low = self.pending.low_water()
        limit = self.last_seq + 1 if low is None else low
        kept = self._kept
        drop: list[int] = []
        while kept and kept[0] < limit:
            drop.append(kept.popleft())
        if drop:
            restarts = self.restarts
            try:
                await self._clear_script(drop)
            except BaseException:
                if restarts == self.restarts:  # else they are numbers of the record lost
                    kept.extendleft(reversed(drop))  # removing them again is harmless
                raise
            if restarts == self.restarts:  # else the numbers may be the new record's batches now
                for seq in drop:
                    self._digests.pop(seq, None)
        if len(kept) > self.compact_after:
            await self._compact()

    async def _compact(self) -> None:
        """Replace every kept batch by one snapshot of the tasks not done, stored under the oldest
        batch's number: older than any batch popped meanwhile, so order holds on replay."""
        replaced = list(self._kept)
        low = replaced[0]
        snapshot = self._encode([e.task for e in self.pending.live()])
        self.pending.rebase(low)  # safe whether or not the script below runs
        restarts = self.restarts
        _removed, stored = await self._clear_script(replaced[1:], (low, snapshot))
        if restarts != self.restarts or not stored:
            # The record started over meanwhile (batch `low` is not the one handed over): a
            # snapshot under an old number would come out of order with the new record's batches.
            log.warning("in-flight record not compacted: it changed under the daemon (Redis lost its data?)",
                        db=self.db.name, table=self.table, key=self.record)
            return
        gone = set(replaced[1:])
        self._kept = deque(s for s in self._kept if s not in gone)
        for seq in gone:
            self._digests.pop(seq, None)
        self._digests[low] = _digest(snapshot)
        self.compactions += 1
        log.info("in-flight record compacted", db=self.db.name, table=self.table, batches=len(replaced),
                 tasks=len(self.pending.live()))

    async def _clear_script(self, drop: list[int], replace: tuple[int, str] | None = None) -> list[int]:
        """Remove batches `drop`, and replace batch `replace[0]` by the snapshot `replace[1]`,
        each only while it holds what was handed over. Returns [removed, snapshot stored]."""
        args: list[str | int] = [len(drop)]
        for seq in drop:
            args += [seq, self._digests.get(seq, "")]
        if replace is not None:
            low, snapshot = replace
            args += [low, self._digests.get(low, ""), snapshot]
        return [int(x) for x in await self.db.evalsha(INFLIGHT_CLEAR, [self.record], args)]

    async def _keep_only_undone(self, clean: bool) -> None:
        await self.clear()
        if self._kept:
            await self._compact()
        if clean:
            await self.guard.stopped_cleanly()

    async def close(self, timeout: float, *, clean: bool = True) -> None:
        """Remove what is finished (bounded by `timeout`) and stop the clearing task. The tasks not
        done stay in the record for the next start, as one snapshot of them: the handled tasks
        that shared their batches are not handed over again (at-least-once is for crashes).

        The clearing task is cancelled until it ends: a cancellation that lands in a library call
        can be lost (a shutdown of 50 tables once waited forever on one clearing task that had
        gone back to waiting for progress)."""
        if self._clearer is not None:
            while not self._clearer.done():
                self._clearer.cancel()
                await asyncio.wait((self._clearer,), timeout=0.1)
            self._clearer = None
        try:
            await asyncio.wait_for(self._keep_only_undone(clean), timeout)
        except (RedisError, OSError, TimeoutError) as exc:
            log.warning("in-flight record not cleared; the next start hands its batches over again",
                        db=self.db.name, table=self.table, error=str(exc))
        await self.guard.close()


def crash_reason(limit: int) -> str:
    """Why take_over() set a task aside."""
    return (f"in a handler when each of the last {limit} runs ended abnormally (crashed, killed or "
            "stalled): it may be what ends the daemon")


def _digest(text: str | bytes) -> str:
    """SHA1 of a batch as the record holds it (what Lua's redis.sha1hex gives)."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")
    return hashlib.sha1(data).hexdigest()


def _is_seq(text: str) -> bool:
    """Whether a record field or counter is a sequence number a pop wrote (bounded digits)."""
    return text.isdigit() and len(text) <= 18


def _encode_state(tasks: list[KeyOpFieldsValues]) -> str:
    """Tasks as a state pop reply (each one entry: a DEL has no fields)."""
    return json.dumps([[t.key, [x for fv in t.fvs for x in fv] if t.op != DEL_COMMAND else [], 0] for t in tasks],
                      ensure_ascii=False)


def _encode_queue(tasks: list[KeyOpFieldsValues]) -> str:
    """Tasks as a queue pop reply: [key, op, field, value, ...]."""
    return json.dumps([[t.key, t.op, *(x for fv in t.fvs for x in fv)] for t in tasks], ensure_ascii=False)
