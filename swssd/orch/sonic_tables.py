"""Tables SONiC's own daemons consume: a `state` or `queue` consumer of one of them pops its
changes (SPOP, LPOP) away from that daemon, so on a switch the daemon would never see them.
Warned about by `swssd check` and at start, unless the table says `take_from_sonic = true`."""

from __future__ import annotations

from ..schema import sonic_consumer
from .config import Config

#: The kinds that take a table's changes away from other consumers (a subscriber only watches).
POPPING_KINDS = ("state", "queue")


def sonic_table_warnings(config: Config) -> list[str]:
    """One line per popped table that a SONiC daemon consumes, naming the table and the daemon."""
    lines = []
    for i, orch in enumerate(config.orchs):
        for j, t in enumerate(orch.tables):
            daemon = sonic_consumer(t.db, t.table)
            if daemon is None or t.resolved_kind not in POPPING_KINDS or t.take_from_sonic:
                continue
            lines.append(
                f"orchs.{i}.tables.{j} ({orch.display_name}): {t.db} {t.table} is consumed by SONiC's {daemon}; "
                f"popping it (kind \"{t.resolved_kind}\") takes its changes away from {daemon} on a switch. "
                f"Watch it with kind = \"subscriber\" instead (takes nothing away), consume a table of your own, "
                f"or set take_from_sonic = true if that is what you mean"
            )
    return lines
