"""Reading the daemon's config file: TOML parsed, validated by the models of config.py, paths made
relative to the file, and the checks across entries; every error names the file and the field."""

from __future__ import annotations

import difflib
import os
import tomllib
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import ConfigError
from .config import Config


def _resolve(base: Path, value: Any) -> Any:
    return value if value is None or Path(value).is_absolute() else base / value


def config_from_dict(raw: dict[str, Any], path: str | None = None) -> Config:
    """Validate a parsed document; paths in it are relative to the file's directory."""
    try:
        config = Config.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise ConfigError(path, field or None, _problem(exc, raw)) from None
    if path is not None:
        base = Path(path).resolve().parent
        config.redis.database_config = _resolve(base, config.redis.database_config)
        config.redis.database_global_config = _resolve(base, config.redis.database_global_config)
        config.logging.file = _resolve(base, config.logging.file)
        config.capture.directory = _resolve(base, config.capture.directory)
        config.plugin_path = [_resolve(base, p) for p in config.plugin_path]
        for name in ("password_file", "ca_file", "cert_file", "key_file"):
            setattr(config.redis, name, _resolve(base, getattr(config.redis, name)))
    config.redis.resolve(path)
    config.path = path
    _check_tables(config)
    _check_files(config)
    return config


def _problem(exc: ValidationError, raw: dict[str, Any]) -> str:
    """The first error's text, with what a reader needs to fix it: the [[orchs]] entry by its name
    (not its 0-based index), and an unknown key by name, with the known key it resembles (a
    misspelt `tabels` also makes `tables` missing, which pydantic reports first)."""
    errors = exc.errors()
    first = errors[0]
    msg = first["msg"].removeprefix("Value error, ")
    unknown = next((e for e in errors if e["type"] == "extra_forbidden"), None)
    if unknown is not None:
        key = str(unknown["loc"][-1])
        near = difflib.get_close_matches(key, _keys_at(unknown["loc"][:-1]), n=1)
        hint = f"unknown key {key!r}" + (f" (did you mean {near[0]!r}?)" if near else "")
        if unknown is first:
            msg = f"{msg}: {hint}"
        else:
            beside = unknown["loc"][:-1] == first["loc"][:-1]
            where = ".".join(str(p) for p in unknown["loc"][:-1])
            msg += f"; {hint}" + (f" in {where}" if where and not beside else "")
    loc = first["loc"]
    if len(loc) >= 2 and loc[0] == "orchs" and isinstance(loc[1], int):
        entries = raw.get("orchs")
        entry = entries[loc[1]] if isinstance(entries, list) and loc[1] < len(entries) else None
        name = (entry.get("name") or entry.get("plugin")) if isinstance(entry, dict) else None
        if isinstance(name, str):
            msg = f"{msg} (the [[orchs]] entry {name!r})"
    return msg


def _keys_at(loc: tuple[int | str, ...]) -> list[str]:
    """The keys the config's model takes at `loc` (a section, an [[orchs]] entry, its tables)."""
    model: type[BaseModel] = Config
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        annotation = field.annotation if field is not None else None
        inner = [*typing.get_args(annotation), annotation]
        found = next((t for t in inner if isinstance(t, type) and issubclass(t, BaseModel)), None)
        if found is None:
            return []
        model = found
    return list(model.model_fields)


def _check_files(config: Config) -> None:
    """Paths that can never work, told at load (and by `swssd check`) instead of at first use:
    a log file that is a directory, a capture directory that is a file. What may change while the
    daemon runs (permissions, a full disk) is left to the writers."""
    log_file = config.logging.file
    if log_file is not None and log_file.is_dir():
        raise ConfigError(config.path, "logging.file", f"{log_file} is a directory; name a file in it")
    directory = config.capture.directory
    if config.capture.enabled and directory.exists() and not directory.is_dir():
        raise ConfigError(config.path, "capture.directory", f"{directory} is not a directory")
    for i, path in enumerate(config.plugin_path):
        if not path.is_dir():
            raise ConfigError(config.path, f"plugin_path.{i}", f"{path} is not a directory")


def _check_tables(config: Config) -> None:
    """One consumer per table (two would split its changes), and table names distinct per plugin
    (handle() tells tables apart by name)."""
    owners: dict[tuple[str, str, str, str], int] = {}
    for i, orch in enumerate(config.orchs):
        names: set[str] = set()
        for j, t in enumerate(orch.tables):
            field = f"orchs.{i}.tables.{j}.table"
            if t.table in names:
                raise ConfigError(config.path, field, f"table {t.table!r} is listed twice for this plugin")
            names.add(t.table)
            # a zmq table is a channel of its endpoint's server, apart from the Redis channels
            other = owners.setdefault((t.namespace, t.db, t.table, t.endpoint or ""), i)
            if other != i and t.resolved_kind in ("state", "queue", "zmq"):
                where = f"{t.db} of namespace {t.namespace!r}" if t.namespace else t.db
                where += f" (zmq {t.endpoint})" if t.endpoint else ""
                raise ConfigError(
                    config.path, field,
                    f"{where} {t.table} is already consumed by orchs.{other}; one table has one consumer",
                )


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a TOML file, raising ConfigError (one line: file, field, problem)."""
    name = str(path)
    try:
        with open(name, "rb") as f:
            raw = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(name, None, f"cannot read config: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(name, None, f"not valid TOML: {exc}") from None
    return config_from_dict(raw, name)
