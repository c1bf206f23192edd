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
            self.log.info(f"port {task.key} removed from STATE_DB")
            return
        await self.state.set(task.key, [*task.fvs, ("state", "ok")])
        changes = " ".join(f"{f}={v}" for f, v in task.fvs)
        self.log.info(f"port {task.key} {changes} -> STATE_DB state=ok")
