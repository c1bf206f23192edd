"""What apply_temp_view() sends: the difference between a table and the temp view that replaces
it, as the C++ ProducerStateTable::apply_temp_view computes it. Pure, shared by the asyncio
ProducerStateTable and the compatible layer's."""

from __future__ import annotations

from collections.abc import Mapping

from .config_entries import cpp_order


def temp_view_difference(
    current: Mapping[str, Mapping[str, str]], target: dict[str, dict[str, str]]
) -> tuple[list[str], list[str]]:
    """(keys to set, keys to delete), in std::map (byte) order. A key gone from the view is
    deleted; one that lost a field is deleted and set again; one with a new or changed field is
    set; an unchanged key is removed from `target`, which then holds what is sent."""
    keys_to_set: list[str] = []
    keys_to_del: list[str] = []
    for key in sorted(current, key=cpp_order):
        old, new = current[key], target.get(key)
        if new is None:
            keys_to_del.append(key)
            keys_to_set.append(key)
            continue
        need_del = need_set = False
        for field in sorted(old, key=cpp_order):
            if field not in new:
                need_del = need_set = True
                break
            if new[field] != old[field]:
                need_set = True
        if len(new) > len(old):
            need_set = True
        if need_del:
            keys_to_del.append(key)
        if need_set:
            keys_to_set.append(key)
        else:
            del target[key]
    keys_to_set += [key for key in sorted(target, key=cpp_order) if key not in current]
    return keys_to_set, keys_to_del
