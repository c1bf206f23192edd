"""Example plugin: consume APPL_DB ROUTE_TABLE and "install" routes whose ports are up.

A route names its ports in `ifname` (comma separated, as SONiC's ROUTE_TABLE). While one of them
has no `state=ok` in STATE_DB PORT_TABLE, the handler raises Retry: the route stays pending and
runs again when new data arrives for this plugin and at least every retry_interval — orchagent's
way of waiting for a dependency. Installed routes are written to STATE_DB ROUTE_TABLE.
"""

from __future__ import annotations

from swssd import DEL_COMMAND, KeyOpFieldsValues, Orch, Retry, Table


class RouteOrch(Orch):
    databases = ("STATE_DB",)

    async def start(self) -> None:
        state = self.connector("STATE_DB")
        self.ports = Table(state, self.options.get("port_table", "PORT_TABLE"))
        self.installed = Table(state, self.options.get("route_table", "ROUTE_TABLE"))
        #: what is installed, as orchagent's m_syncdRoutes: prefix -> fields
        self.routes: dict[str, dict[str, str]] = {}

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        prefix = task.key
        if task.op == DEL_COMMAND:
            if self.routes.pop(prefix, None) is not None:
                await self.installed.delete(prefix)
                self.log.info("route removed", prefix=prefix)
            return
        # A SET carries the changed fields only: complete it from what is installed.
        fields = {**self.routes.get(prefix, {}), **dict(task.fvs)}
        for port in filter(None, fields.get("ifname", "").split(",")):
            if await self.ports.hget(port, "state") != "ok":
                raise Retry(f"port {port} is not up yet")
        await self.installed.set(prefix, [*fields.items(), ("state", "ok")])
        verb = "updated" if prefix in self.routes else "installed"
        self.routes[prefix] = fields
        self.log.info(f"route {verb}", prefix=prefix, nexthop=fields.get("nexthop", "?"),
                      ifname=fields.get("ifname", "?"))
