"""`swssd check --config FILE`: what `swssd run` would refuse at start, found without consuming.

The config is validated, its database names are looked up in database_config.json (or
database_global.json for tables in a namespace), and every plugin is imported and created (its
`start()` is not run: that needs Redis). Nothing is read from or written to Redis.
"""

from __future__ import annotations

import argparse

from ..errors import ConfigError, UnknownDatabaseError, UnknownNamespaceError
from ..orch import plugins
from ..orch.config import DEFAULT_CONFIG, PLAIN_HASH_DATABASES, Config
from ..orch.sonic_tables import sonic_table_warnings
from ..orch.timers import resolve_timers
from ..redis.dbconfig import SonicDBConfig, SonicDBGlobalConfig
from ..schema import DATABASES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", metavar="FILE", default=DEFAULT_CONFIG, help="TOML config to check")


class _Databases:
    """Database names as `swssd run` resolves them: database_config.json, else SONiC's usual ones."""

    def __init__(self, config: Config) -> None:
        self.config = config
        path = config.database_config_path()
        self.db_config = SonicDBConfig.load(path) if path is not None else None
        self.global_config: SonicDBGlobalConfig | None = None

    def check(self, name: str, field: str, namespace: str = "", who: str = "") -> None:
        path = self.config.path
        if namespace:
            if self.config.redis.url is not None:
                raise ConfigError(path, f"{field}.namespace", "namespaces need database_global.json; "
                                  "they cannot be used with redis.url")
            if self.global_config is None:
                self.global_config = SonicDBGlobalConfig.load(self.config.redis.database_global_config)
            try:
                self.global_config.database(name, namespace)
            except (UnknownDatabaseError, UnknownNamespaceError) as exc:
                raise ConfigError(path, field, f"{who} {exc}".strip()) from None
        elif self.db_config is not None:
            try:
                self.db_config.database(name)
            except UnknownDatabaseError as exc:
                raise ConfigError(path, field, f"{who} {exc}".strip()) from None
        elif name not in DATABASES:
            known = ", ".join(DATABASES)
            raise ConfigError(path, field, f"{who} unknown database {name!r}; known: {known}".strip())


def check(config: Config) -> list[str]:
    """Raise ConfigError or PluginError for what `swssd run` would refuse; else one line per plugin,
    and a warning line for what it would warn about at start."""
    plugins.use_config_dir(config)
    databases = _Databases(config)
    lines = [f"warning: {line}" for line in (*config.redis.warnings(config.path), *plugins.code_warnings(config),
                                                 *config.timing_warnings(), *sonic_table_warnings(config))]
    if config.warm_restart is not None:
        for name in ("STATE_DB", "CONFIG_DB"):
            databases.check(name, "warm_restart", who="warm restart's records need")
        lines.append(f"warm restart: app {config.warm_restart.app!r}, container {config.warm_restart.container!r}")
    for i, oc in enumerate(config.orchs):
        for j, t in enumerate(oc.tables):
            databases.check(t.db, f"orchs.{i}.tables.{j}.db", t.namespace)
        for j, db in enumerate(oc.databases):
            databases.check(db, f"orchs.{i}.databases.{j}")
        orch = plugins.create(oc.plugin)
        for db in orch.databases:
            databases.check(db, f"orchs.{i}.plugin", who=f"plugin {oc.display_name!r} asks for")
        tables = ", ".join(f"{t.namespace + '/' if t.namespace else ''}{t.db} {t.table} ({t.resolved_kind})"
                           for t in oc.tables)
        timers = resolve_timers(orch, oc, i, config)
        every = "".join(f"; timer {t.name} every {t.interval:g} s" for t in timers)
        lines.append(f"{oc.display_name}: {type(orch).__qualname__} consumes {tables}{every}")
        lines += [
            f"warning: orchs.{i}.tables.{j}: {t.db} {t.table} is a key-set table (kind \"state\"), but SONiC "
            f"writes {t.db} with plain hash writes, which never reach a key-set consumer: if that is how "
            "this table is written, set kind = \"subscriber\""
            for j, t in enumerate(oc.tables) if t.kind == "state" and t.db in PLAIN_HASH_DATABASES
        ]
    return lines
