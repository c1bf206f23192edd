"""Example plugin: mirror APPL_DB PORT_TABLE into STATE_DB PORT_TABLE, marking which ports are up.

What orchagent's PortsOrch does for STATE_DB in the simplest form: a SET writes the changed
fields, a DEL removes the entry. A change of `admin_status` also writes `state`: `ok` for a port
that is up, `down` otherwise (the example's simplification: the route example waits for `ok`).
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
        admin = dict(task.fvs).get("admin_status")
        state = None if admin is None else ("ok" if admin == "up" else "down")
        await self.state.set(task.key, [*task.fvs, *([("state", state)] if state else [])])
        # Key and fields as values, not in the message: the log cuts long ones (a key or an entry
        # in Redis can be of any size), and escapes what would upset a terminal.
        self.log.info(f"port -> STATE_DB state={state or 'unchanged'}", port=task.key, fields=dict(task.fvs))
