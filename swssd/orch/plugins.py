"""Finding Orch plugins: `module:Class` in the config, or a name in the `swssd.orchs` entry point group."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from ..errors import SwssdError
from .orch import Orch

ENTRY_POINT_GROUP = "swssd.orchs"


class PluginError(SwssdError):
    """A plugin could not be imported, created or started; the message names it.

    The message is kept to one line (exception texts may span several): it is what the
    daemon prints before exiting.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


def available() -> dict[str, str]:
    """Entry point names of installed plugins and what they point at."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_class(spec: str) -> type[Orch]:
    """The Orch subclass named by `spec` ("package.module:Class" or an entry point name)."""
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            raise PluginError(f"plugin {spec!r}: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
        obj: object = module
        for part in attr.split("."):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise PluginError(f"plugin {spec!r}: module {module_name!r} has no {attr!r}") from None
    else:
        found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == spec]
        if not found:
            names = ", ".join(sorted(available())) or "none installed"
            raise PluginError(
                f"plugin {spec!r}: no entry point of that name in group {ENTRY_POINT_GROUP!r} "
                f"(known: {names}); or write it as 'module:Class'"
            )
        try:
            obj = found[0].load()
        except Exception as exc:
            raise PluginError(f"plugin {spec!r}: cannot load {found[0].value!r}: {type(exc).__name__}: {exc}") from exc
    if not isinstance(obj, type):
        raise PluginError(f"plugin {spec!r}: it is a {type(obj).__name__}, not a subclass of swssd.orch.Orch")
    if not issubclass(obj, Orch):
        raise PluginError(f"plugin {spec!r}: class {obj.__qualname__} is not a subclass of swssd.orch.Orch")
    if obj.handle is Orch.handle and obj.handle_batch is Orch.handle_batch:
        # Refused here rather than found out by dead-lettering every task.
        raise PluginError(f"plugin {spec!r}: class {obj.__qualname__} implements neither handle() nor handle_batch()")
    return obj


def create(spec: str) -> Orch:
    """Import and instantiate a plugin, any failure reported as PluginError naming it."""
    cls = load_class(spec)
    try:
        return cls()
    except Exception as exc:
        raise PluginError(f"plugin {spec!r}: {cls.__name__}() failed: {type(exc).__name__}: {exc}") from exc
