"""Orch plugins with orchagent's semantics, and the daemon that runs them (`swssd run`)."""

from .orch import BatchOutcome, Orch, Retry
from .pending import PendingMap

__all__ = ["BatchOutcome", "Orch", "PendingMap", "Retry"]
