"""restore: write a replayed state into live Redis tables through ProducerStateTable's temp view.

For each table, the entries of the state go into a temp view and apply_temp_view() publishes
only the difference against what the table holds now: unchanged entries are not sent, entries
that should not exist are deleted, so consumers see the minimal set of changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..channels.producer_state_table import ProducerStateTable
from ..redis.connector import DBConnector
from ..schema import separator_of

TableState = dict[str, dict[str, dict[str, str]]]
"""table -> key -> field -> value"""


@dataclass
class Target:
    """Where to restore: a database_config.json name lookup, or a URL with an id and separator."""

    db: str
    url: str | None = None
    db_id: int | None = None
    separator: str | None = None
    db_config: str | None = None


async def connect(target: Target) -> DBConnector:
    if target.url:
        return await DBConnector.from_url(
            target.url,
            db_id=target.db_id,
            separator=target.separator or separator_of(target.db),
            name=target.db,
        )
    return await DBConnector.connect(target.db, config=target.db_config)


async def restore(target: Target, state: Mapping[str, Mapping[str, Mapping[str, str]]]) -> dict[str, int]:
    """Apply each table's entries as one temp view; returns the entry count per table."""
    db = await connect(target)
    try:
        counts: dict[str, int] = {}
        for table, entries in state.items():
            producer = ProducerStateTable(db, table)
            producer.create_temp_view()
            await producer.set_many((key, dict(fields)) for key, fields in entries.items())
            await producer.apply_temp_view()
            counts[table] = len(entries)
        return counts
    finally:
        await db.close()
