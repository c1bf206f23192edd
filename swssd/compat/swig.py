"""What SWIG hands a program for a C++ pointer: a new Python proxy object each time, of the class
the function's C++ signature names, whose methods reach the one C++ object (its virtual methods
the derived class's). Two proxies of one object are neither identical nor equal and hash apart;
a proxy of a base class has only the base's methods, so a program casts it to reach the rest.
The layer hands out the same shape: `proxy(cls, target)` is a new `cls` object whose public
methods are `target`'s own bound methods."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")

#: the attribute of a proxy that holds the object it stands for
_TARGET = "_swig_target"


class SwigObject:
    """A proxy's `this`: the pointer as SWIG prints it; like SWIG's, it cannot be pickled or
    deep-copied (copy.copy of a proxy shares it, as the binding's does)."""

    def __init__(self, type_name: str, target: object) -> None:
        self._type_name = type_name
        self._address = id(target)

    def __repr__(self) -> str:
        return f"<Swig Object of type '{self._type_name}' at {self._address:#x}>"

    def __reduce_ex__(self, protocol: object) -> tuple[object, ...]:
        raise TypeError("cannot pickle 'SwigPyObject' object")


def swig_repr(obj: object, this: SwigObject) -> str:
    """`<swsscommon.swsscommon.Class; proxy of <Swig Object of type '...' at 0x...> >`."""
    return f"<swsscommon.swsscommon.{type(obj).__name__}; proxy of {this!r} >"


#: each proxied class's public methods, found once
_methods: dict[type, tuple[str, ...]] = {}


def _public_methods(cls: type) -> tuple[str, ...]:
    found = _methods.get(cls)
    if found is None:
        found = _methods[cls] = tuple(name for name in dir(cls) if not name.startswith("_")
                                      and callable(getattr(cls, name)) and not isinstance(getattr(cls, name), type))
    return found


def proxy(cls: type[T], target: T, cpp_type: str) -> T:
    """A new `cls` object standing for `target`, as SWIG returns a `cpp_type *` (the proxy is owned
    by the C++ side: thisown False)."""
    made = cls.__new__(cls)
    state = made.__dict__
    for name in _public_methods(cls):
        state[name] = getattr(target, name)
    state[_TARGET] = target
    state["this"] = SwigObject(f"{cpp_type} *", target)
    state["thisown"] = False
    return made


def target_of(obj: T) -> T:
    """The object a proxy stands for; the object itself when it is not a proxy."""
    target: T = obj.__dict__.get(_TARGET, obj) if hasattr(obj, "__dict__") else obj
    return target
