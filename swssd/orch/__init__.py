"""Orch plugins with orchagent's semantics, and the daemon that runs them (`swssd run`).

Layer rule: imports the base modules, `swssd.redis`, `swssd.channels`, `swssd.ops` and
`swssd.capture`; `orch/examples/` are plugins and use the public `swssd` API like any plugin.
"""

from .orch import BatchOutcome, Orch, Retry, TimerSpec, timer
from .pending import PendingMap

__all__ = ["BatchOutcome", "Orch", "PendingMap", "Retry", "TimerSpec", "timer"]
