"""DropLog: what a ZmqServer drops, counted and logged, with the log bounded whatever the peers send.

A malformed message is logged one by one up to _LOG_FIRST, then one line per _LOG_EVERY. A message
for a (db, table) without a consumer is logged once per name, with the names cut: they come from
the peer and may be megabytes, so the names remembered are cut too (to _NAME characters, with
their lengths), and at most _NAMES of them.
"""

from __future__ import annotations

import structlog

from .serializer import ZmqMessageError

log = structlog.get_logger(__name__)

_LOG_FIRST = 100
_LOG_EVERY = 1000
_NAMES = 1000
_NAME = 100


class DropLog:
    """The counts and log lines of one server's dropped messages (`where`: its endpoint)."""

    def __init__(self, where: str) -> None:
        self.where = where
        #: messages that were not BinarySerializer messages
        self.malformed = 0
        #: well-formed messages for a (db, table) without a consumer
        self.unrouted = 0
        self._logged: set[tuple[str, str, int, int]] = set()

    def malformed_message(self, data: bytes, exc: ZmqMessageError) -> None:
        self.malformed += 1
        if self.malformed <= _LOG_FIRST or self.malformed % _LOG_EVERY == 0:
            log.error(
                "malformed zmq message dropped",
                endpoint=self.where, reason=str(exc), size=len(data), malformed=self.malformed,
                head=data[:64].hex(),
            )

    def unrouted_message(self, db_name: str, table_name: str) -> None:
        self.unrouted += 1
        if len(self._logged) >= _NAMES:
            return
        key = (db_name[:_NAME], table_name[:_NAME], len(db_name), len(table_name))
        if key not in self._logged:
            self._logged.add(key)
            log.warning(
                "zmq message for a table without consumer dropped",
                endpoint=self.where, db=key[0], table=key[1], dropped=self.unrouted,
            )
