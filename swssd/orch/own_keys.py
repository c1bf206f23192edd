"""The daemon's own keys in Redis (in-flight records, instance leases) are checked, not trusted:
anyone with write access can put anything there. One that cannot be read is renamed aside with
a code for why in its name, said in one log line naming both names, and the daemon goes on as if
it had not been there, never a traceback at every start until someone deletes it."""

from __future__ import annotations

import time

import structlog

from ..redis.connector import DBConnector

log = structlog.get_logger("swssd.daemon")

#: Characters of a reason kept in the log line.
REASON_EXCERPT = 300


async def set_aside(db: DBConnector, key: str, code: str, reason: str) -> str:
    """Rename `key` to `<key>:set-aside:<unix ms>:<code>` (RENAMENX: nothing is overwritten) and
    say so; returns the new name. `code` is a short word (wrong-type, malformed)."""
    aside = f"{key}:set-aside:{int(time.time() * 1000)}:{code}"
    await db.redis.execute_command("RENAMENX", key, aside)
    log.error("own key unreadable: set aside", db=db.name, key=key, set_aside_as=aside,
              reason=reason[:REASON_EXCERPT])
    return aside
