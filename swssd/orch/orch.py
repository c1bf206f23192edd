"""The plugin interface: an Orch handles the tasks of the tables it consumes, as orchagent's Orch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import structlog
from structlog.typing import FilteringBoundLogger

from ..fields import KeyOpFieldsValues
from ..redis.connector import DBConnector

#: What handle_batch() may return: nothing (all done), or per task None (done), a Retry or an error.
BatchOutcome = Sequence[BaseException | None] | None


class Retry(Exception):
    """Raised by a handler to keep the task pending: something it depends on is not there yet
    (a route whose port does not exist). The task runs again when new data arrives for the Orch
    and at least every `retry_interval`; it is never dead-lettered for it.
    """

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


def connector_key(db_name: str, namespace: str = "") -> str:
    """How the daemon names a connector: `CONFIG_DB`, or `asic0/CONFIG_DB` in a namespace."""
    return f"{namespace}/{db_name}" if namespace else db_name


class Orch:
    """Subclass it and implement `handle()` (or `handle_batch()`); docs/plugins.md has a
    complete example, its test and its packaging.

    The daemon creates the plugin with no arguments, then gives it its name, options (the
    `options` table of its config) and database connectors before calling `start()`.
    Tasks of one table are handled one at a time, in order per key; different tables run
    concurrently. A task arrives merged by orchagent's rules (see swssd.orch.pending).
    """

    #: Databases the plugin writes or reads besides the ones it consumes (e.g. "STATE_DB").
    databases: ClassVar[Sequence[str]] = ()
    #: Most tasks given to one handle_batch() call.
    batch_size: ClassVar[int] = 1024

    def __init__(self) -> None:
        self.name = type(self).__name__
        #: The `options` table of the plugin's config entry, as TOML parsed it.
        self.options: Mapping[str, Any] = {}
        #: structlog logger bound with `orch=<name>`: keyword arguments become fields of the log line.
        self.log: FilteringBoundLogger = structlog.get_logger("swssd.orch").bind(orch=self.name)
        self._connectors: Mapping[str, DBConnector] = {}

    def attach(self, name: str, options: Mapping[str, Any], connectors: Mapping[str, DBConnector]) -> None:
        """Called by the daemon before start()."""
        self.name = name
        self.options = options
        self.log = structlog.get_logger("swssd.orch").bind(orch=name)
        self._connectors = connectors

    def connector(self, db_name: str, namespace: str = "") -> DBConnector:
        """The daemon's connector to `db_name` (of `namespace`, multi-ASIC): one it consumes, or
        one listed in `databases`."""
        try:
            return self._connectors[connector_key(db_name, namespace)]
        except KeyError:
            known = ", ".join(sorted(self._connectors)) or "none"
            raise KeyError(
                f"{self.name}: no connector for {connector_key(db_name, namespace)!r} (have: {known}); "
                f"list it in the plugin's `databases` or in its config's `databases`"
            ) from None

    @property
    def handles_batches(self) -> bool:
        """Whether the plugin overrides handle_batch()."""
        return type(self).handle_batch is not Orch.handle_batch

    async def start(self) -> None:
        """Runs once before any task is handled; raising stops the daemon at start-up."""

    async def stop(self) -> None:
        """Runs once at shutdown, after the last task was handled."""

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        """Apply one task of `table`. Raise Retry to keep it pending, anything else to fail it."""
        raise NotImplementedError(f"{type(self).__name__} implements neither handle() nor handle_batch()")

    async def handle_batch(self, table: str, tasks: list[KeyOpFieldsValues]) -> BatchOutcome:
        """Apply many tasks of `table` at once (at most one per key). Return None when all are
        done, or one entry per task: None (done), a Retry (keep pending) or an exception (failed).
        Raising applies to every task of the batch.
        """
        raise NotImplementedError
