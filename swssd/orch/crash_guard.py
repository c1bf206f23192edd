"""Which task was in a handler when the daemon ended abnormally, so that a task that kills the
daemon (a crash, an os._exit, a stall systemd aborts) is set aside after `limit` such ends in a
row, and nothing else is ever blamed.

One object per state or queue table. It keeps two fields in the table's in-flight record
(reliable_pop.py):

- `handler`: the keys whose tasks may be in a handler now, as a JSON list. Present from the
  take-over at start until a clean stop removes it: a start that finds it knows the last run
  ended abnormally, and with which keys in a handler. Written before a handler runs:
  - normally once for a window of the next `WINDOW` keys of a pass (one write for many handler
    calls, on a connection of its own: cheap, and never queued behind the pops sent ahead). It is not cleared
    when the worker goes idle (that doubled the writes of a trickle of changes): a kill while
    idle blames the last window once, which alone never sets anything aside;
  - for a key blamed by the last abnormal end, `[key]` alone before its handler and `[]` after:
    from the second abnormal end on, the blame is exact. The worker runs blamed keys first, so
    a restart loop whose kills come at the same time after each start does not find the same
    innocent key in its handler each time (each start redoing the same work at the same pace).
- `blamed`: key -> the abnormal ends in a row at which that key was in the `handler` field.
  A key is set aside when its count reaches `limit`; a key blamed once whose handler returns
  (whatever the outcome) is cleared. Tasks only taken over, popped or pending never count.
"""

from __future__ import annotations

import json
import time

import structlog
from redis.exceptions import RedisError

from ..redis.connector import DBConnector

log = structlog.get_logger("swssd.daemon")

#: The in-flight record's field naming the keys in a handler now (present while a start runs).
HANDLER_FIELD = "handler"
#: The in-flight record's field counting, per key, the abnormal ends in a row it was in a handler.
BLAMED_FIELD = "blamed"
#: Keys of a pass marked in a handler by one write (normal path).
WINDOW = 256
#: Default abnormal ends in a row with a task in its handler after which it is set aside.
DEFAULT_LIMIT = 3
#: Seconds without marking after a marking write failed (Redis down: handlers go on unmarked).
_RETRY_AFTER = 1.0


class CrashGuard:
    """The `handler` and `blamed` fields of one in-flight record. See the module docstring."""

    def __init__(self, db: DBConnector, record: str, table: str, limit: int = DEFAULT_LIMIT) -> None:
        self.db = db
        self.record = record
        self.table = table
        self.limit = limit
        #: keys blamed by the abnormal ends before this start: run first and alone, marked exactly
        self.blamed: dict[str, int] = {}
        #: keys set aside at this start (reconcile skips them too)
        self.aside: set[str] = set()
        #: what this start last wrote to the `handler` field (None: nothing yet)
        self.marked: list[str] | None = None
        self._failed_at = -1e9
        self._warned = False
        self._judgement: tuple[set[str], list[str]] | None = None
        #: the marks' own connection (opened at the first mark)
        self._marks: DBConnector | None = None

    # -- start --------------------------------------------------------------------------

    def judge(self, raw: dict[str, str]) -> tuple[set[str], list[str]]:
        """From the record as the last run left it: the keys to set aside now, and what is wrong
        with the two fields (they are checked, not trusted). Sets `blamed` for this start. Once
        per start: a take-over retried after Redis failed mid-way gets the first answer again
        (the record may hold this start's own fields by then)."""
        if self._judgement is not None:
            return self._judgement
        problems: list[str] = []
        previous: dict[str, int] = {}
        text = raw.get(BLAMED_FIELD)
        if text is not None:
            try:
                loaded = json.loads(text)
                if not isinstance(loaded, dict):
                    raise ValueError("not an object")
                previous = {str(k): int(v) for k, v in loaded.items()}
            except (ValueError, TypeError) as exc:
                problems.append(f"{BLAMED_FIELD} is not key counts: {str(exc)[:80]}")
        in_handler: list[str] = []
        text = raw.get(HANDLER_FIELD)
        if text is not None:
            try:
                loaded = json.loads(text)
                if not isinstance(loaded, list):
                    raise ValueError("not a list")
                in_handler = [str(k) for k in loaded]
            except (ValueError, TypeError) as exc:
                problems.append(f"{HANDLER_FIELD} is not a list of keys: {str(exc)[:80]}")
        # No `handler` field: the last run stopped cleanly (or never started a handler's table).
        counts = {key: previous.get(key, 0) + 1 for key in in_handler}
        aside = {key for key, n in counts.items() if n >= self.limit}
        self.blamed = {key: n for key, n in counts.items() if key not in aside}
        self.aside = aside
        self._judgement = aside, problems
        return self._judgement

    async def started(self) -> None:
        """This start runs: an abnormal end from now on is seen by the next start."""
        await self.db.redis.hset(self.record, mapping={HANDLER_FIELD: "[]", BLAMED_FIELD: json.dumps(self.blamed)})
        self.marked = []

    async def stopped_cleanly(self) -> None:
        """A clean stop: nothing was in a handler, nothing stays blamed."""
        await self.db.redis.hdel(self.record, HANDLER_FIELD, BLAMED_FIELD)

    # -- around handler calls -----------------------------------------------------------

    async def mark(self, keys: list[str]) -> None:
        """Before handlers run for `keys`: the record names them. A write that fails is logged
        and the handlers run unmarked (Redis is down; the pops report it)."""
        if self.marked == keys:
            return
        now = time.monotonic()
        if now - self._failed_at < _RETRY_AFTER:
            return
        try:
            await self._hset(HANDLER_FIELD, json.dumps(keys, ensure_ascii=False))
        except (RedisError, OSError) as exc:
            self._failed_at = now
            self.marked = None
            if not self._warned:
                self._warned = True
                log.warning("handler keys not recorded; a crash now blames what was recorded before",
                            db=self.db.name, table=self.table, error=f"{type(exc).__name__}: {exc}")
            return
        self.marked = keys

    async def returned(self, key: str) -> None:
        """A blamed key's handler returned: it is not what ends the daemon; clear it."""
        del self.blamed[key]
        try:
            await self._hset(HANDLER_FIELD, "[]", BLAMED_FIELD, json.dumps(self.blamed, ensure_ascii=False))
            self.marked = []
        except (RedisError, OSError):
            self.marked = None  # counted once more at most if the daemon dies before the next write

    async def _hset(self, *fields_values: str) -> None:
        """HSET on the marks' own connection: the pipelined path (a few us, not redis-py's ~80
        a call), and not the pops' connection, where it would wait for the pops sent ahead."""
        if self._marks is None:
            self._marks = DBConnector(self.db.new_client(), db_id=self.db.db_id, name=self.db.name)
        (reply,) = await self._marks.execute_many([("HSET", self.record, *fields_values)])
        if isinstance(reply, Exception):
            raise reply

    async def close(self) -> None:
        """Close the marks' connection (at shutdown, after the handlers ended)."""
        if self._marks is not None:
            await self._marks.close()
            self._marks = None
