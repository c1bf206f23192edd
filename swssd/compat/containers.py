"""The binding's container types: SWIG's proxies of std::vector and std::map, as plain list and dict
subclasses that keep the few behaviours programs rely on (a map's keys() is an indexable list)."""

from __future__ import annotations

from typing import Any, TypeVar

from ..channels.config_entries import cpp_order

K = TypeVar("K")
V = TypeVar("V")


class StdMap(dict[K, V]):
    """A std::map as SWIG hands it over: keys(), values() and items() are lists, in key order as
    the C++ map holds them (the layer builds each one in that order)."""

    def keys(self) -> list[K]:  # type: ignore[override]
        return list(super().keys())

    def values(self) -> list[V]:  # type: ignore[override]
        return list(super().values())

    def items(self) -> list[tuple[K, V]]:  # type: ignore[override]
        return list(super().items())

    def has_key(self, key: K) -> bool:
        """SWIG's map proxies keep Python 2's has_key."""
        return key in self

    def asdict(self) -> dict[K, V]:
        return dict(self)


class FieldValueMap(StdMap[str, str]):
    """std::map<std::string, std::string>: DBConnector.hgetall's and get_all's result, with the
    binding's get(key, default) and update(...)."""


class GetInstanceListResult(StdMap[str, Any]):
    """SonicDBConfig.getInstanceList's result: instance name to RedisInstInfo."""


class FieldValuePairs(list[tuple[str, str]]):
    """std::vector<std::pair<std::string, std::string>>: the pairs a Table or producer writes, in order."""


class VectorString(list[str]):
    """std::vector<std::string>."""


def field_value_map(flat: list[str]) -> FieldValueMap:
    """HGETALL's flat reply as the std::map the binding returns: fields in byte order."""
    pairs = dict(zip(flat[::2], flat[1::2]))
    return FieldValueMap((f, pairs[f]) for f in sorted(pairs, key=cpp_order))
