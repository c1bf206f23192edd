"""Script calls sent ahead of their answers: a producer writes on while Redis runs what it sent."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import structlog
from redis.exceptions import NoScriptError

from .connector import DBConnector, ScriptCall, evalsha_command
from .transport import RedisConnection

log = structlog.get_logger(__name__)


class _Call:
    """A call of the window: its reply, None while it waits to be sent (again)."""

    __slots__ = ("call", "reply", "sent")

    def __init__(self, call: ScriptCall) -> None:
        self.call = call
        self.reply: asyncio.Future[list[Any]] | None = None
        self.sent = False


class SendAhead:
    """Script calls sent in order, each kept until Redis has answered it; `send()` returns while
    up to `depth` of them still wait for their answer.

    Nothing is dropped unanswered: a call lost with its connection, or refused with NOSCRIPT
    after a SCRIPT FLUSH, is sent again (after a SCRIPT LOAD) in its place in the order, at most
    once per send() or wait(); if that fails too, the error is raised and the calls stay for the
    next send() or wait(). Every call out is on one connection, so a call sent again can never
    land after a later one. Only for scripts whose effect may happen twice with the same end
    state (a producer's sets and dels), as DBConnector.evalsha assumes by default.
    """

    def __init__(self, db: DBConnector, depth: int) -> None:
        self.db = db
        self.depth = depth
        self._calls: deque[_Call] = deque()
        #: the connection the calls out were sent on
        self._conn: RedisConnection | None = None

    def __len__(self) -> int:
        """Calls not answered yet (out, or waiting to be sent again)."""
        return len(self._calls)

    async def send(self, call: ScriptCall) -> None:
        """Send `call` after every call before it; return once at most `depth` calls wait for an
        answer. The call is kept even if this raises: an error reply raised here is an earlier
        call's (which is dropped, answered); a ConnectionError means Redis could not be reached,
        and the calls are sent by the next send() or wait()."""
        self._calls.append(_Call(call))
        await self._settle(self.depth)

    async def wait(self) -> None:
        """Wait until every call is answered, raising the first error reply found."""
        await self._settle(0)

    async def _settle(self, keep: int) -> None:
        """Send what waits to be sent, and take answers from the oldest until `keep` calls are out."""
        calls = self._calls
        resent = False
        while True:
            lost = self._take_answers()
            if not calls:
                return
            if lost is not None:  # the oldest was lost or forgotten: so were the calls after it
                out = [c.reply for c in calls if c.reply is not None and not c.reply.done()]
                if out:  # (a NOSCRIPT: the others' answers are right behind it)
                    await asyncio.wait(out)
                    continue
                self._send_again()
                if resent:
                    raise lost
                resent = True
            if calls[-1].reply is None:
                await self._send_unsent()
                continue
            if len(calls) <= keep:
                return
            oldest = calls[0].reply
            assert oldest is not None  # sent: the unsent ones are the newest
            await asyncio.wait((oldest,))

    def _take_answers(self) -> BaseException | None:
        """Drop answered calls from the oldest on, raising an error reply (its call dropped too).
        Returns the error if the oldest was lost with its connection or refused with NOSCRIPT."""
        calls = self._calls
        while calls and (reply := calls[0].reply) is not None and reply.done():
            error = reply.exception()  # only set when the connection ended before the answer
            if error is not None:
                return error
            answer = reply.result()[0]
            if isinstance(answer, NoScriptError):
                return answer
            calls.popleft()
            if isinstance(answer, Exception):
                raise answer
        return None

    def _send_again(self) -> None:
        """Mark every call out that did not run to be sent again; all are answered (or lost).

        Only another client loading the scripts right after a flush lets a call run after one
        refused with NOSCRIPT; the refused ones are then sent again after it, with a warning
        (their order against it cannot be kept), and an error reply among those that ran is
        raised."""
        calls = self._calls
        out = [(c, c.reply) for c in calls if c.reply is not None]
        again = [c for c, reply in out if not _ran(reply)]
        error: Exception | None = None
        if len(again) < len(out):
            log.warning(
                "scripts were flushed while writes were out and loaded again meanwhile: "
                "writes refused with NOSCRIPT are sent again after later ones",
                again=len(again),
                ran=len(out) - len(again),
            )
            answers = [reply.result()[0] for c, reply in out if c not in again]
            error = next((a for a in answers if isinstance(a, Exception)), None)
            kept = [c for c in calls if c.reply is None or c in again]
            calls.clear()
            calls.extend(kept)
        for call in again:
            call.reply = None
        if error is not None:
            raise error

    async def _send_unsent(self) -> None:
        """Write every call waiting to be sent, in order, on the connector's connection; ahead of
        them a SCRIPT LOAD of each script not loaded yet, and of those of calls sent again.

        A load is only sent with no call out: a script loaded behind a call refused with NOSCRIPT
        (scripts flushed) would let the calls after it run before that one is sent again."""
        db = self.db
        conn = await db.connection()
        await conn.writable()
        calls = self._calls
        out = [c.reply for c in calls if c.reply is not None]
        unsent = [c for c in calls if c.reply is None]
        new = db.unloaded(c.call[0] for c in unsent if not c.sent)
        again = [c.call[0] for c in unsent if c.sent]
        if out and (conn is not self._conn or new or again):
            # their answers first: lost with their connection, or a load must not pass them
            await asyncio.wait(out)
            return
        if new or again:
            # a failed load shows as NOSCRIPT in the calls after it
            conn.submit(db.script_loads([*new, *again])).add_done_callback(_answered)
        for call in unsent:
            call.reply = conn.submit((evalsha_command(call.call),))
            call.sent = True
        self._conn = conn


def _ran(reply: asyncio.Future[list[Any]]) -> bool:
    """Whether Redis ran the call (answered, and not with NOSCRIPT)."""
    return reply.exception() is None and not isinstance(reply.result()[0], NoScriptError)


def _answered(reply: asyncio.Future[list[Any]]) -> None:
    reply.exception()  # retrieved: an error here is seen through the calls after it
