"""The binding's container types: SWIG's proxies of std::vector and std::map. FieldValueMap (what
hgetall returns) is the proxy's shape: not a dict, keys in byte order, str keys and values only,
IndexError for a missing key, equal only to itself; the others are list and dict subclasses that keep
the few behaviours programs rely on (a map's keys() is an indexable list)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from ..channels.config_entries import cpp_order
from .arguments import new_pairs, pair_to_append, permissive
from .swig import SwigObject, swig_repr

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


class FieldValueDict(StdMap[str, str]):
    """hgetall's result when the layer is permissive (SWSSD_COMPAT_PERMISSIVE=1): a dict."""


_MAP = "std::map< std::string,std::string >"
_KEY = f"{_MAP}::key_type const &"
NEW_MAP_OVERLOAD = ("Wrong number or type of arguments for overloaded function 'new_FieldValueMap'.\n"
                    "  Possible C/C++ prototypes are:\n"
                    f"    {_MAP}::map(std::less< std::string > const &)\n"
                    f"    {_MAP}::map()\n"
                    f"    {_MAP}::map({_MAP} const &)\n")
SETITEM_OVERLOAD = ("Wrong number or type of arguments for overloaded function 'FieldValueMap___setitem__'.\n"
                    "  Possible C/C++ prototypes are:\n"
                    f"    {_MAP}::__setitem__({_KEY})\n"
                    f"    {_MAP}::__setitem__({_KEY},{_MAP}::mapped_type const &)\n")


def _check_key(method: str, key: object) -> str:
    """The key typemap: a str, else the binding's TypeError (None its ValueError)."""
    if isinstance(key, str):
        return key
    if key is None:
        raise ValueError(f"invalid null reference in method 'FieldValueMap_{method}', argument 2 of type '{_KEY}'")
    raise TypeError(f"in method 'FieldValueMap_{method}', argument 2 of type '{_KEY}'")


class FieldValueMap:
    """std::map<std::string, std::string> as SWIG's proxy hands it over (hgetall's result): keys,
    values and items are lists in byte order, iteration yields keys, a missing key is an IndexError,
    a key or value that is not a str a TypeError; it is not a dict (no pop, setdefault, |, JSON) and
    equals only itself. FieldValueMap(), FieldValueMap(a dict of str), FieldValueMap(another)."""

    _map: dict[str, str]
    this: SwigObject
    thisown: bool

    def __init__(self, *args: object) -> None:
        if not args:
            items: dict[str, str] = {}
        elif len(args) == 1 and isinstance(args[0], FieldValueMap):
            items = dict(args[0]._map)
        elif (len(args) == 1 and isinstance(args[0], dict)
              and all(isinstance(k, str) and isinstance(v, str) for k, v in args[0].items())):
            items = {k: args[0][k] for k in sorted(args[0], key=cpp_order)}
        else:
            raise TypeError(NEW_MAP_OVERLOAD)
        self._map = items
        self.this = SwigObject(f"{_MAP} *", self)
        self.thisown = True

    @classmethod
    def _of_sorted(cls, items: dict[str, str]) -> FieldValueMap:
        """A map of `items`, already str and in byte order (hgetall's reply), without the checks."""
        made = cls.__new__(cls)
        made._map = items
        made.this = SwigObject(f"{_MAP} *", made)
        made.thisown = True
        return made

    def __repr__(self) -> str:
        return swig_repr(self, self.this)

    def __len__(self) -> int:
        return len(self._map)

    def __bool__(self) -> bool:
        return bool(self._map)

    __nonzero__ = __bool__

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._map))

    def key_iterator(self) -> Iterator[str]:
        return iter(list(self._map))

    def value_iterator(self) -> Iterator[str]:
        return iter(list(self._map.values()))

    def iterator(self) -> Iterator[tuple[str, str]]:
        return iter(list(self._map.items()))

    iterkeys = key_iterator
    itervalues = value_iterator
    iteritems = iterator

    def keys(self) -> list[str]:
        return list(self._map)

    def values(self) -> list[str]:
        return list(self._map.values())

    def items(self) -> list[tuple[str, str]]:
        return list(self._map.items())

    def asdict(self) -> dict[str, str]:
        return dict(self._map)

    def __getitem__(self, key: str) -> str:
        try:
            return self._map[_check_key("__getitem__", key)]
        except KeyError:
            raise IndexError("key not found") from None

    def __contains__(self, key: object) -> bool:
        return _check_key("__contains__", key) in self._map

    def has_key(self, key: str) -> bool:
        return _check_key("has_key", key) in self._map

    def count(self, key: str) -> int:
        return int(_check_key("count", key) in self._map)

    def get(self, key: str, default: Any = None) -> Any:
        """The value, or `default`: the binding's own helper (a `key in self` then `self[key]`)."""
        return self._map[key] if _check_key("__contains__", key) in self._map else default

    def __setitem__(self, *args: object) -> None:
        """map[key] = value; the binding's one-argument form erases the key."""
        if not all(isinstance(arg, str) for arg in args):
            raise TypeError(SETITEM_OVERLOAD)
        key = str(args[0])
        if len(args) == 1:
            self._map.pop(key, None)
        elif key in self._map:
            self._map[key] = str(args[1])
        else:
            self._map[key] = str(args[1])
            ordered = sorted(self._map.items(), key=lambda kv: cpp_order(kv[0]))
            self._map.clear()
            self._map.update(ordered)

    def __delitem__(self, key: str) -> None:
        try:
            del self._map[_check_key("__delitem__", key)]
        except KeyError:
            raise IndexError("key not found") from None

    def erase(self, key: str) -> int:
        """Erase `key`: how many were erased (0 or 1), as std::map::erase(key)."""
        return 0 if self._map.pop(_check_key("erase", key), None) is None else 1

    def update(self, *args: Any, **kwargs: Any) -> None:
        """The binding's own helper: each item of dict(*args, **kwargs) set in turn."""
        other = dict(*args, **kwargs)
        for key in other:
            self[key] = other[key]

    def empty(self) -> bool:
        return not self._map

    def size(self) -> int:
        return len(self._map)

    def clear(self) -> None:
        self._map.clear()

    def swap(self, v: FieldValueMap) -> None:
        mine = dict(self._map)
        self._map.clear()
        self._map.update(v._map)
        v._map.clear()
        v._map.update(mine)


class GetInstanceListResult(StdMap[str, Any]):
    """SonicDBConfig.getInstanceList's result: instance name to RedisInstInfo."""


class FieldValuePairs(list[tuple[str, str]]):
    """std::vector<std::pair<std::string, std::string>>: the pairs a Table or producer writes, in order;
    built and appended to as the binding's (pairs of str only: an int or float is its TypeError)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(new_pairs(args))

    def append(self, pair: tuple[str, str]) -> None:
        super().append(pair_to_append(pair))


class VectorString(list[str]):
    """std::vector<std::string>."""


def field_value_map(flat: list[str]) -> FieldValueMap | FieldValueDict:
    """HGETALL's flat reply as the std::map the binding returns: fields in byte order (a dict when
    the layer is permissive)."""
    pairs = dict(zip(flat[::2], flat[1::2]))
    ordered = {f: pairs[f] for f in sorted(pairs, key=cpp_order)}
    return FieldValueDict(ordered) if permissive() else FieldValueMap._of_sorted(ordered)
