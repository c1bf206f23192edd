"""CONFIG_DB entries, typed and raw, as swsscommon's Python ConfigDBConnector converts them.

A field `name@` holds a comma-joined list (a Python list when typed), any other value is stored
as `str(value)`, an entry with no fields is stored as `NULL: NULL`, tuple keys are joined with
the separator; table names are upper-cased as C++ toupper does and fields go to Redis in
std::map order. Shared by the asyncio ConfigDBConnector, its listener and the blocking
compatibility layer: pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias, overload

ConfigKey: TypeAlias = str | tuple[str, ...]
"""An entry key: a string, or a tuple for a multi-key table (joined with the separator)."""
TypedEntry: TypeAlias = dict[str, str | list[str]]
RawEntry: TypeAlias = dict[str, str]
TypedConfig: TypeAlias = dict[str, dict[ConfigKey, TypedEntry]]

CONFIG_DB_ID = 4
CONFIG_DB_SEPARATOR = "|"
#: stored as field and value of an entry with no fields
NULL_FIELD = "NULL"


def cpp_order(text: str) -> bytes:
    """Sort key of std::map<std::string, ...>: the UTF-8 bytes, unsigned."""
    return text.encode("utf-8", "surrogateescape")


def require_str(what: str, value: object) -> None:
    """Refuse what swsscommon's conversion to std::string refuses, before anything is sent."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be str, not {type(value).__name__}: {value!r}")


def ascii_upper(table: str) -> str:
    """C++ to_upper: ::toupper byte by byte in the C locale, so only a-z change."""
    require_str("table name", table)
    return table.encode("utf-8", "surrogateescape").upper().decode("utf-8", "surrogateescape")


def in_cpp_order(raw: Mapping[str, str]) -> RawEntry:
    """The entry as swsscommon hands it to Python: a std::map, fields in byte order."""
    return {field: raw[field] for field in sorted(raw, key=cpp_order)}


def typed_to_raw(typed: Mapping[Any, Any] | None) -> dict[Any, str]:
    """Typed entry to Redis fields, as swsscommon: None -> {} (delete), {} -> NULL: NULL,
    a list (exactly `list`) -> `field@` comma-joined, anything else -> str(value)."""
    if typed is None:
        return {}
    if len(typed) == 0:
        return {NULL_FIELD: NULL_FIELD}
    raw: dict[Any, str] = {}
    for field, value in typed.items():
        if type(value) is list:
            raw[field + "@"] = ",".join(value)
        else:
            raw[field] = str(value)
    return raw


@overload
def raw_to_typed(raw: None) -> None: ...
@overload
def raw_to_typed(raw: Mapping[str, str]) -> TypedEntry: ...
def raw_to_typed(raw: Mapping[str, str] | None) -> TypedEntry | None:
    """Redis fields to a typed entry, as swsscommon: `NULL` dropped, `field@` split on ','
    into `field` (a later field of the same name wins, in the mapping's order)."""
    if raw is None:
        return None
    typed: TypedEntry = {}
    for field, value in raw.items():
        if field == NULL_FIELD:
            continue
        if field.endswith("@"):
            typed[field[:-1]] = value.split(",")
        else:
            typed[field] = value
    return typed


def serialize_key(key: ConfigKey, separator: str = CONFIG_DB_SEPARATOR) -> str:
    """A tuple (exactly `tuple`) joined with `separator`; anything else through str()."""
    if type(key) is tuple:
        return separator.join(key)
    return str(key)


def deserialize_key(key: str, separator: str = CONFIG_DB_SEPARATOR) -> ConfigKey:
    """Split on `separator`: a tuple when there is more than one part, else the string."""
    parts = key.split(separator)
    return tuple(parts) if len(parts) > 1 else key


def hset_command(hash_key: str, raw: Mapping[Any, str]) -> tuple[str, ...]:
    """HSET of every field in std::map order."""
    for field in raw:
        require_str("field name", field)
    return ("HSET", hash_key, *(x for field in sorted(raw, key=cpp_order) for x in (field, raw[field])))


def typed_config_to_raw(
    data: Mapping[str, Mapping[Any, Any] | None], serialize: Callable[[Any], str]
) -> dict[str, dict[str, dict[Any, str]]]:
    """mod_config's conversion, as swsscommon's does it: a table given as {} is left out, None
    becomes {} (the table is deleted), each entry goes through typed_to_raw (None: {}, deleted),
    keys through `serialize` (the connector's serialize_key)."""
    raw_config: dict[str, dict[str, dict[Any, str]]] = {}
    for table_name, table_data in data.items():
        if table_data == {}:
            continue
        raw_config[table_name] = {}
        if table_data is None:
            continue
        for key, entry in table_data.items():
            raw_config[table_name][serialize(key)] = typed_to_raw(entry)
    return raw_config
