"""The binding's argument conversion: SWIG's `std::string const &` typemap takes a str and nothing
else (an int, a float, bytes or a bool is a TypeError, None a ValueError, each naming the method
and the argument's position, `self` being the first), so a value the binding refuses is refused
here too instead of being sent as its repr."""

from __future__ import annotations

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
