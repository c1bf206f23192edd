"""The binding's argument conversion: SWIG's `std::string const &` typemap takes a str and nothing
else (an int, a float, bytes or a bool is a TypeError, None a ValueError, each naming the method
and the argument's position, `self` being the first), so a value the binding refuses is refused
here too instead of being sent as its repr."""

from __future__ import annotations

import os
from typing import Any

#: the environment variable that restores the layer's lenient forms (see permissive())
PERMISSIVE_ENV = "SWSSD_COMPAT_PERMISSIVE"

OVERLOADED_SET = ("Wrong number or type of arguments for overloaded function 'DBConnector_set'.\n"
                  "  Possible C/C++ prototypes are:\n"
                  "    swss::DBConnector::set(std::string const &,std::string const &)\n"
                  "    swss::DBConnector::set(std::string const &,int)\n")


def check_strings(method: str, *args: object) -> None:
    """Raise as the typemap does for the first of `args` (arguments 2, 3... of `method`) that is
    not a str."""
    for position, value in enumerate(args, start=2):
        if not isinstance(value, str):
            if value is None:
                raise ValueError(f"invalid null reference in method '{method}', argument {position} of type "
                                 f"'std::string const &'")
            raise TypeError(f"in method '{method}', argument {position} of type 'std::string const &'")


def set_value(key: object, value: object) -> str:
    """DBConnector.set's value as its two overloads take it: a str, or an int (a bool is one:
    True is stored as "1"); anything else is the overload error, None the null reference."""
    if key is None or value is None:
        raise ValueError(f"invalid null reference in method 'DBConnector_set', argument {2 if key is None else 3} "
                         f"of type 'std::string const &'")
    if isinstance(key, str):
        if isinstance(value, str):
            return value
        if isinstance(value, int):
            return str(int(value))
    raise TypeError(OVERLOADED_SET)


def permissive() -> bool:
    """Whether `SWSSD_COMPAT_PERMISSIVE=1` asks for the layer's lenient forms (select() returns the
    added object, hgetall a dict, ints taken in field/value pairs) instead of the binding's strict
    ones; read at each call, so a test or a program can switch it."""
    return os.environ.get(PERMISSIVE_ENV) == "1"


FVS = "std::vector< swss::FieldValueTuple,std::allocator< swss::FieldValueTuple > >"
#: the C++ prototypes the binding lists when a set()'s arguments match none of them
_SET_PROTOTYPES = {
    "Table_set": (f"swss::Table::set(std::string const &,{FVS} const &,std::string const &,std::string const &)",
                  f"swss::Table::set(std::string const &,{FVS} const &,std::string const &,std::string const &,"
                  "int64_t const &)"),
    "ProducerStateTable_set": (
        f"swss::ProducerStateTable::set(std::string const &,{FVS} const &,std::string const &,std::string const &)",
        "swss::ProducerStateTable::set(std::vector< swss::KeyOpFieldsValuesTuple,"
        "std::allocator< swss::KeyOpFieldsValuesTuple > > const &)"),
}
_PAIRS = "std::vector< std::pair< std::string,std::string > >"
_NEW_PAIRS_PROTOTYPES = (f"{_PAIRS}::vector()", f"{_PAIRS}::vector({_PAIRS} const &)",
                         f"{_PAIRS}::vector({_PAIRS}::size_type)",
                         f"{_PAIRS}::vector({_PAIRS}::size_type,{_PAIRS}::value_type const &)")
#: DBConnector.hmset's argument: no typemap converts a Python object to it, so the binding refuses every one
HMSET_REFUSED = ("in method 'DBConnector_hmset', argument 2 of type 'std::unordered_map< std::string,"
                 "std::vector< std::pair< std::string,std::string >,std::allocator< std::pair< std::string,"
                 "std::string > > > > const &'")


def overload_error(function: str, prototypes: tuple[str, ...]) -> TypeError:
    """SWIG's error for arguments that match none of an overloaded function's prototypes."""
    return TypeError(f"Wrong number or type of arguments for overloaded function '{function}'.\n"
                     "  Possible C/C++ prototypes are:\n" + "".join(f"    {p}\n" for p in prototypes))


def set_pairs(method: str, key: object, fvs: object, op: object = "", prefix: object = "") -> list[Any]:
    """field, value, field, value... of what a writer's set(key, pairs) takes, refused as the binding
    refuses it: pairs given as anything but a list or tuple of 2-tuples of str (or bytes), an int or a
    float among them included, are the SystemError its typemap leaves (a malformed pair or a key that is
    not a str, or an op or prefix that is not one, the overload TypeError where the method is overloaded;
    a None key the null-reference ValueError). Permissive: any iterable of 2-tuples."""
    if permissive():
        return _lenient_pairs(fvs)
    prototypes = _SET_PROTOTYPES.get(method)
    if prototypes and (not isinstance(key, (str, type(None))) or not isinstance(op, str)
                       or not isinstance(prefix, str)):
        raise overload_error(method, prototypes)
    check_strings(method, key)
    if not isinstance(fvs, (list, tuple)):
        raise SystemError(f"<built-in function {method}> returned a result with an exception set")
    flat: list[Any] = []
    for pair in fvs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            if prototypes:
                raise overload_error(method, prototypes)
            raise SystemError(f"<built-in function {method}> returned NULL without setting an exception")
        if not isinstance(pair[0], (str, bytes)) or not isinstance(pair[1], (str, bytes)):
            raise SystemError(f"<built-in function {method}> returned NULL without setting an exception")
        flat += pair
    return flat


def _lenient_pairs(fvs: Any) -> list[Any]:
    flat: list[Any] = []
    for pair in fvs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"field/value pairs must be 2-tuples of str, not {pair!r}")
        flat += pair
    return flat


def new_pairs(args: tuple[Any, ...]) -> list[tuple[str, str]]:
    """FieldValuePairs(...)'s contents as the binding's constructor takes them: nothing, a count (that
    many empty pairs), or a list or tuple of 2-sequences of str; anything else (an int or float value)
    its overload TypeError, None its ValueError. Permissive: any iterable, kept as given."""
    if permissive():
        return list(*args)
    if not args:
        return []
    if len(args) == 1:
        given = args[0]
        if given is None:
            raise ValueError(f"invalid null reference in method 'new_FieldValuePairs', argument 1 of type "
                             f"'{_PAIRS} const &'")
        if isinstance(given, int) and not isinstance(given, bool) and given >= 0:
            return [("", "")] * given
        if isinstance(given, (list, tuple)) and all(_is_str_pair(pair) for pair in given):
            return [(pair[0], pair[1]) for pair in given]
    raise overload_error("new_FieldValuePairs", _NEW_PAIRS_PROTOTYPES)


def _is_str_pair(pair: object) -> bool:
    """A 2-sequence of str, as SWIG's std::pair conversion takes it (a 2-character str is one too)."""
    return (isinstance(pair, (list, tuple, str)) and len(pair) == 2
            and isinstance(pair[0], str) and isinstance(pair[1], str))


def pair_to_append(pair: object) -> tuple[str, str]:
    """FieldValuePairs.append's argument: a 2-sequence of str, else the binding's TypeError."""
    if permissive():
        return pair  # type: ignore[return-value]
    if _is_str_pair(pair):
        return pair[0], pair[1]  # type: ignore[index]
    raise TypeError(f"in method 'FieldValuePairs_append', argument 2 of type '{_PAIRS}::value_type const &'")


def check_string_map(method: str, position: int, values: object) -> None:
    """A `std::map<std::string, std::string> const &` argument: a dict of str to str, else the
    binding's TypeError (an int or float value included). Permissive: anything hmset can send."""
    if permissive():
        return
    if not isinstance(values, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in values.items()):
        raise TypeError(f"in method '{method}', argument {position} of type 'std::map< std::string,std::string,"
                        "std::less< std::string >,std::allocator< std::pair< std::string const,std::string > > > "
                        "const &'")
