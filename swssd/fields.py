"""The unit of change that travels through every channel: key, operation, field/value pairs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple, TypeAlias

SET_COMMAND = "SET"
DEL_COMMAND = "DEL"

FieldValues: TypeAlias = list[tuple[str, str]]
FieldValuesLike: TypeAlias = Iterable[tuple[str, str]] | Mapping[str, str]


class KeyOpFieldsValues(NamedTuple):
    """One change: the C++ library's KeyOpFieldsValuesTuple."""

    key: str
    op: str
    fvs: FieldValues


def as_field_values(fvs: FieldValuesLike) -> FieldValues:
    """Accept a mapping or pairs, keep the order given (the C++ vector order)."""
    if type(fvs) is list:  # the common case, checked first: this runs once per key
        return fvs
    if isinstance(fvs, Mapping):
        return list(fvs.items())
    return [(f, v) for f, v in fvs]
