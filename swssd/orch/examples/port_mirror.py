"""Example plugin: mirror APPL_DB PORT_TABLE into STATE_DB PORT_TABLE, marking each port ready.

What orchagent's PortsOrch does for STATE_DB in the simplest form: a SET writes the changed
fields plus `state=ok`, a DEL removes the entry.
"""

from __future__ import annotations

from swssd import DEL_COMMAND, KeyOpFieldsValues, Orch, Table


class PortMirrorOrch(Orch):
    databases = ("STATE_DB",)

    async def start(self) -> None:
        self.state = Table(self.connector("STATE_DB"), self.options.get("state_table", "PORT_TABLE"))

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        if task.op == DEL_COMMAND:
            await self.state.delete(task.key)
            self.log.info("port removed from STATE_DB", port=task.key)
            return
        await self.state.set(task.key, [*task.fvs, ("state", "ok")])
        # Key and fields as values, not in the message: the log cuts long ones (a key or an entry
        # in Redis can be of any size), and escapes what would upset a terminal.
        self.log.info("port -> STATE_DB state=ok", port=task.key, fields=dict(task.fvs))
