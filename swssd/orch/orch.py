"""The plugin interface: an Orch handles the tasks of the tables it consumes, as orchagent's Orch."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

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


#: The attribute `@timer` puts its TimerSpec in, on the decorated function.
TIMER_ATTR = "__swssd_timer__"
TimerMethod = TypeVar("TimerMethod", bound=Callable[..., Awaitable[None]])


@dataclass(frozen=True)
class TimerSpec:
    """A timer as declared (or as the config overrides it). Seconds throughout; `first_delay`
    None is one interval; `stall_after` None is [daemon] stall_after."""

    name: str
    interval: float
    jitter: float = 0.0
    first_delay: float | None = None
    stall_after: float | None = None
    #: the Orch method it calls
    method: str = ""


def timer(
    interval: float, *, name: str | None = None, jitter: float = 0.0, first_delay: float | None = None
) -> Callable[[TimerMethod], TimerMethod]:
    """Declare an `async def` method of an Orch (taking only self) as periodic work, called every
    `interval` seconds (`jitter`: up to that many seconds later each time; `first_delay`: the
    first call after start, default one interval). `name` (default: the method's) is what the
    config's `[orchs.timers.<name>]`, the logs and the `swssd_timer_*` metrics call it. The values
    are checked by `swssd check` and at start."""

    def mark(method: TimerMethod) -> TimerMethod:
        checked: Callable[..., object] = method  # no narrowing of `method` by the check
        if not inspect.iscoroutinefunction(checked):
            raise TypeError(f"@timer needs an `async def` method, not {method!r}")
        spec = TimerSpec(name or method.__name__, interval, jitter, first_delay, method=method.__name__)
        setattr(method, TIMER_ATTR, spec)
        return method

    return mark


def declared_timers(orch_class: type[Orch]) -> list[TimerSpec]:
    """The timers a plugin class declares, its bases' included; a method overridden without
    `@timer` is no timer any more."""
    found: dict[str, TimerSpec | None] = {}
    for klass in reversed(orch_class.__mro__):
        for attr, value in vars(klass).items():
            spec = getattr(value, TIMER_ATTR, None)
            if isinstance(spec, TimerSpec) or attr in found:
                found[attr] = spec if isinstance(spec, TimerSpec) else None
    return [spec for spec in found.values() if spec is not None]


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
        #: True when the daemon takes part in warm restart ([warm_restart]) and this start is a
        #: warm one (WarmStart::checkWarmStart's answer); set before start()
        self.warm_start = False
        #: set by reconcile_now(): the daemon reconciles without waiting for the rest of the timer
        self.reconcile_asked = asyncio.Event()

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

    async def restore(self, table: str, tasks: list[KeyOpFieldsValues]) -> None:
        """A warm start only, after start() and before any task of any of the plugin's tables is
        handled: entries that already existed in consumed `table`, as SETs with all their fields
        (every entry exactly once, in one or more calls). Take them as the state the plugin had
        (orchagent's bake()), not as changes to apply. Raising stops the daemon at start-up."""

    async def reconcile(self) -> None:
        """A warm start only, once the reconcile timer (CONFIG_DB `WARM_RESTART|<container>`
        `<app>_timer`) expired or every plugin called reconcile_now(): remove what the restored
        state had and the state since does not (stale routes, neighbours, counters)."""

    def reconcile_now(self) -> None:
        """Say the plugin has caught up after a warm start: the daemon reconciles once every
        plugin said so, without waiting for the rest of the reconcile timer."""
        self.reconcile_asked.set()

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        """Apply one task of `table`. Raise Retry to keep it pending, anything else to fail it."""
        raise NotImplementedError(f"{type(self).__name__} implements neither handle() nor handle_batch()")

    async def handle_batch(self, table: str, tasks: list[KeyOpFieldsValues]) -> BatchOutcome:
        """Apply many tasks of `table` at once (at most one per key). Return None when all are
        done, or one entry per task: None (done), a Retry (keep pending) or an exception (failed).
        Raising applies to every task of the batch.
        """
        raise NotImplementedError
