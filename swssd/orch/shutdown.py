"""Shutdown's steps: the popped tasks finished (bounded by shutdown_timeout, cut short by a
second signal), the plugins stopped, and one line for each kind of task left, saying what
becomes of it. Daemon._shutdown runs them, then closes what start-up opened."""

from __future__ import annotations

import asyncio
from collections.abc import Container, Mapping, Sequence

import structlog

from ..channels.zmq import ZmqConsumerStateTable, ZmqServer
from .worker import OrchRuntime, TableWorker

log = structlog.get_logger("swssd.daemon")

#: how long each plugin's stop() may take at shutdown
STOP_HOOK_TIMEOUT = 5.0


async def finish_workers(workers: Sequence[TableWorker], force: asyncio.Event, deadline: float, timeout: float) -> None:
    """Let the workers finish their pending tasks until `deadline` (loop time) or `force`, then
    cancel their handlers; `timeout` is the configured shutdown_timeout, for the log line."""
    tasks = [t for t in (w.finish() for w in workers) if t is not None]
    if not tasks:
        return
    budget = max(0.1, deadline - asyncio.get_running_loop().time())
    finished = asyncio.ensure_future(asyncio.wait(tasks, timeout=budget))
    forced = asyncio.ensure_future(force.wait())
    await asyncio.wait((finished, forced), return_when=asyncio.FIRST_COMPLETED)
    forced.cancel()
    if not force.is_set() and not all(t.done() for t in tasks):
        log.warning("shutdown timeout: cancelling handlers", timeout=timeout)
    for w in workers:
        w.cancel()
    # A handler may swallow the cancellation; do not wait on it forever.
    await asyncio.wait(tasks, timeout=STOP_HOOK_TIMEOUT)
    finished.cancel()


async def stop_plugins(started: Sequence[OrchRuntime], deadline: float) -> None:
    """Each started plugin's stop(), last started first, each bounded."""
    for rt in reversed(started):
        budget = max(0.1, min(STOP_HOOK_TIMEOUT, deadline - asyncio.get_running_loop().time()))
        try:
            await asyncio.wait_for(rt.orch.stop(), budget)
        except Exception:
            log.exception("plugin stop() failed", orch=rt.orch.name)


def report_left(workers: Sequence[TableWorker], kept_in_redis: Container[TableWorker], instance: str) -> None:
    """Say exactly what becomes of the tasks shutdown could not finish."""
    left = _left_by_kind(workers)
    kept = left.get("state", 0) + left.get("queue", 0)
    if kept:
        log.warning(
            "stopped with tasks not handled: they stay in the in-flight record in Redis and run "
            "first at the next start of this instance", tasks=kept, instance=instance,
            tables=sorted(w.table for w in workers if w.pending_count and w in kept_in_redis),
        )
    if left.get("subscriber"):
        log.warning("stopped with subscriber tasks not handled: the next start reads those tables again",
                    tasks=left["subscriber"])
    if left.get("notification"):
        log.warning("stopped with notifications not handled: they are lost (notifications are at most once)",
                    tasks=left["notification"])
    if left.get("zmq"):
        log.warning("stopped with zmq changes not handled: they are lost (the ZMQ channel keeps nothing "
                    "for a restarted consumer, as in C++)", tasks=left["zmq"])


async def close_zmq(workers: Sequence[TableWorker], servers: Mapping[str, ZmqServer]) -> None:
    """The zmq consumers first (they unregister and persist what they queued), then their
    servers, before the Redis connections persistence writes through are closed."""
    for w in workers:
        if isinstance(w.consumer, ZmqConsumerStateTable):
            await w.consumer.close()
    for server in servers.values():
        await server.close()


def _left_by_kind(workers: Sequence[TableWorker]) -> dict[str, int]:
    """Tasks not handled per table kind."""
    left: dict[str, int] = {}
    for w in workers:
        # a zmq consumer's buffer is all there is of what it received and was not popped
        waiting = w.consumer.waiting if isinstance(w.consumer, ZmqConsumerStateTable) else 0
        if w.pending_count + waiting:
            left[w.kind] = left.get(w.kind, 0) + w.pending_count + waiting
    return left
