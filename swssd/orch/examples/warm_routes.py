"""Example plugin: routes that survive a warm restart, with a timer publishing their count.

It consumes APPL_DB EXAMPLE_ROUTE_TABLE and "programs" each route into STATE_DB
EXAMPLE_ROUTE_PROGRAMMED (the stand-in for the ASIC, which keeps its state across a warm restart
as the hardware does). With `[warm_restart]` in the config:

- a warm start: `restore()` gets every route the table holds (with what changed while the daemon
  was down applied). The plugin takes them as what it had programmed (orchagent's bake): it
  reprograms only routes that differ, so the data plane is not disturbed;
- new changes are then handled as usual;
- `reconcile()` (after CONFIG_DB `WARM_RESTART|swss` `<app>_timer`, or at once when the
  `reconcile_early` option is set and the restore is done) removes what is programmed and neither
  restored nor set since: the routes deleted while the daemon was down, stale ones.

The `publish` timer writes the number of routes to STATE_DB EXAMPLE_ROUTE_STATS|summary every 30 s
(the config can change it: `timers = {publish = {interval = 5}}`).
"""

from __future__ import annotations

from swssd import DEL_COMMAND, KeyOpFieldsValues, Orch, Table, timer


class WarmRouteOrch(Orch):
    databases = ("STATE_DB",)

    async def start(self) -> None:
        state = self.connector("STATE_DB")
        self.programmed = Table(state, str(self.options.get("programmed_table", "EXAMPLE_ROUTE_PROGRAMMED")))
        self.stats = Table(state, str(self.options.get("stats_table", "EXAMPLE_ROUTE_STATS")))
        #: prefix -> fields, as orchagent's m_syncdRoutes: what this run knows is programmed
        self.routes: dict[str, dict[str, str]] = {}
        self.log.info("starting", warm=self.warm_start)

    async def restore(self, table: str, tasks: list[KeyOpFieldsValues]) -> None:
        for task in tasks:
            fields = dict(task.fvs)
            if dict(await self.programmed.get(task.key) or []) != fields:
                await self._program(task.key, fields)  # only what differs is touched
            self.routes[task.key] = fields
        self.log.info("routes restored", routes=len(tasks))
        if self.options.get("reconcile_early"):
            self.reconcile_now()

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        if task.op == DEL_COMMAND:
            self.routes.pop(task.key, None)
            await self.programmed.delete(task.key)
            return
        fields = {**self.routes.get(task.key, {}), **dict(task.fvs)}  # a SET carries the changed fields
        await self._program(task.key, fields)
        self.routes[task.key] = fields

    async def reconcile(self) -> None:
        stale = [key for key in await self.programmed.keys() if key not in self.routes]
        for key in stale:
            await self.programmed.delete(key)
        self.log.info("reconciled", stale_removed=len(stale), routes=len(self.routes))

    @timer(30.0, jitter=1.0)
    async def publish(self) -> None:
        await self.stats.set("summary", [("routes", str(len(self.routes)))])

    async def _program(self, prefix: str, fields: dict[str, str]) -> None:
        await self.programmed.delete(prefix)
        await self.programmed.set(prefix, fields)
