"""ConsumerStateTable: pops changed entries out of the key set with the C++ pops script."""

from __future__ import annotations

from .consumer_base import ConsumerTableBase
from .fields import DEL_COMMAND, SET_COMMAND, KeyOpFieldsValues
from .lua import CST_POPS


class ConsumerStateTable(ConsumerTableBase):
    """The consumer side of the state-table channel.

    Each popped entry carries only the fields changed since the last pop; an entry whose state
    hash is empty comes as DEL. The script also moves the fields into `TABLE<sep>key`.
    """

    async def has_pending(self) -> bool:
        return int(await self.db.redis.execute_command("SCARD", self.key_set)) > 0

    async def _pop_batch(self) -> list[KeyOpFieldsValues]:
        reply = await self.db.evalsha(
            CST_POPS,
            [self.key_set, self.name + self.separator, self.del_set],
            [self.pop_batch_size, self.state_prefix],
        )
        out: list[KeyOpFieldsValues] = []
        for key, flat in reply or ():
            fvs = list(zip(flat[::2], flat[1::2]))
            out.append(KeyOpFieldsValues(key, SET_COMMAND if fvs else DEL_COMMAND, fvs))
        return out
