"""Finding Orch plugins: `module:Class`, `path/to/file.py:Class`, or a name in the `swssd.orchs`
entry point group.

A config file is code: its plugins are imported, with the config file's directory on `sys.path`
(as `python script.py` puts the script's) and then its `plugin_path` directories, so a module
written beside the config or in one of those is found by its name, and a relative `file.py` path
is read from the config's directory.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import stat
import sys
import sysconfig
import traceback
from importlib.metadata import EntryPoint, distributions
from pathlib import Path
from types import ModuleType

from ..errors import SwssdError
from .config import Config
from .orch import Orch

ENTRY_POINT_GROUP = "swssd.orchs"


class PluginError(SwssdError):
    """A plugin could not be imported, created or started; the message names it.

    The message is kept to one line (exception texts may span several): it is what the
    daemon prints before exiting.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


#: Where Python's own modules, installed packages and swssd live: a plugin's error is placed in
#: the deepest frame outside them, the line of the plugin that failed.
_NOT_PLUGIN_CODE = tuple(
    {sysconfig.get_path("stdlib"), sysconfig.get_path("purelib"), sysconfig.get_path("platlib"),
     str(Path(__file__).resolve().parents[1])}
)


def where(exc: BaseException) -> str:
    """' (at FILE, line N)': the plugin's line an exception came from (an error at import or in
    start() is otherwise one line with no place to look); '' when no frame has a file."""
    if isinstance(exc, SyntaxError) and exc.filename:  # raised by the compiler: no frame of the file
        return f" (at {exc.filename}, line {exc.lineno})"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<")]
    own = [f for f in frames if not f.filename.startswith(_NOT_PLUGIN_CODE)]
    if not frames:
        return ""
    frame = (own or frames)[-1]
    return f" (at {frame.filename}, line {frame.lineno})"


#: Directories use_config_dir put on sys.path for plugin modules: never where entry points come from.
_PLUGIN_DIRS: set[str] = set()


def _entry_points() -> list[EntryPoint]:
    """The group's entry points of installed distributions only: a `*.dist-info` folder beside a
    config or in a plugin_path directory (or the current directory) is no installed distribution,
    and must not take over a plugin's name."""
    path = [p for p in sys.path if p and str(Path(p).resolve()) not in _PLUGIN_DIRS]
    seen: set[str] = set()
    found: list[EntryPoint] = []
    for dist in distributions(path=path):
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name in seen:  # the first on the path wins, as for imports
            continue
        seen.add(name)
        found.extend(ep for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP)
    return found


def available() -> dict[str, str]:
    """Entry point names of installed plugins and what they point at."""
    return {ep.name: ep.value for ep in _entry_points()}


def code_warnings(config: Config) -> list[str]:
    """One line for each place plugin code is read from that others may write (group or world
    writable): the config's directory, the plugin_path directories and the plugin files; anyone
    who can write there runs code in the daemon."""
    places: list[Path] = [Path(p) for p in config.plugin_path]
    if config.path is not None:
        places.insert(0, Path(config.path).resolve().parent)
    places += [Path(o.plugin.partition(":")[0]) for o in config.orchs if is_file_spec(o.plugin)]
    lines = []
    for place in dict.fromkeys(places):
        try:
            mode = place.stat().st_mode
        except OSError:
            continue
        if mode & (stat.S_IWGRP | stat.S_IWOTH):
            what = "directory" if place.is_dir() else "file"
            lines.append(f"plugin code is read from {place}, a {what} others may write (mode "
                         f"{stat.S_IMODE(mode):04o}): whoever can write there runs code in the daemon; "
                         f"chmod go-w {place}")
    return lines


def is_file_spec(spec: str) -> bool:
    """Whether `spec` names a Python file (`x.py:Class`, `dir/x.py:Class`) rather than a module."""
    module = spec.partition(":")[0]
    return module.endswith(".py") or "/" in module


def use_config_dir(config: Config) -> None:
    """Make the plugins of `config` importable the way its file names them.

    The config file's directory goes first on `sys.path`, then the `plugin_path` directories in
    order, and each relative `file.py:Class` is made absolute against the config's directory (the
    plugin keeps the spec as written for its name, so logs and metrics say what the file says).
    A config built in code (no path) only gets its plugin_path.
    """
    searched = [str(p) for p in config.plugin_path]
    if config.path is not None:
        searched.insert(0, str(Path(config.path).resolve().parent))
    sys.path[0:0] = [p for p in dict.fromkeys(searched) if p not in sys.path]
    _PLUGIN_DIRS.update(str(Path(p).resolve()) for p in searched)
    if config.path is None:
        return
    base = Path(config.path).resolve().parent
    for orch in config.orchs:
        if is_file_spec(orch.plugin):
            file, _, attr = orch.plugin.partition(":")
            if not Path(file).is_absolute():
                orch.name = orch.name or orch.plugin
                orch.plugin = f"{base / file}:{attr}"


_unique = itertools.count(1)


def _import_file(spec: str, file: str) -> ModuleType:
    """Import a plugin file under a private module name (never one a library could want), its
    directory on `sys.path` so it can import the modules beside it. Imported once per file."""
    path = Path(file).resolve()
    if not path.is_file():
        raise PluginError(f"plugin {spec!r}: no such file {str(path)!r}")
    for module in list(sys.modules.values()):
        if getattr(module, "__file__", None) == str(path) and module.__name__.startswith("_swssd_plugin_"):
            return module
    name = f"_swssd_plugin_{path.stem}"
    while name in sys.modules:
        name = f"_swssd_plugin_{path.stem}_{next(_unique)}"
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise PluginError(f"plugin {spec!r}: {str(path)!r} is not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise PluginError(
            f"plugin {spec!r}: cannot import {str(path)!r}: {type(exc).__name__}: {exc}{where(exc)}"
        ) from exc
    return module


def _import_module(spec: str, module_name: str) -> ModuleType:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name.partition(".")[0]:
            raise PluginError(f"plugin {spec!r}: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
        raise PluginError(
            f"plugin {spec!r}: cannot import {module_name!r}: no module of that name on the import path (the "
            "config file's directory, PYTHONPATH, installed packages); name a file as 'file.py:Class' or "
            "install the plugin's package"
        ) from exc
    except Exception as exc:
        raise PluginError(
            f"plugin {spec!r}: cannot import {module_name!r}: {type(exc).__name__}: {exc}{where(exc)}"
        ) from exc


def load_class(spec: str) -> type[Orch]:
    """The Orch subclass named by `spec`: "package.module:Class", "path/file.py:Class" (relative to
    the current directory; `use_config_dir` makes it relative to the config) or an entry point name."""
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        if is_file_spec(spec):
            module = _import_file(spec, module_name)
        else:
            module = _import_module(spec, module_name)
        obj: object = module
        for part in attr.split("."):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise PluginError(f"plugin {spec!r}: module {module_name!r} has no {attr!r}") from None
    else:
        found = [ep for ep in _entry_points() if ep.name == spec]
        if not found:
            names = ", ".join(sorted(available())) or "none installed"
            raise PluginError(
                f"plugin {spec!r}: no entry point of that name in group {ENTRY_POINT_GROUP!r} "
                f"(known: {names}); or write it as 'module:Class' or 'file.py:Class'"
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
        raise PluginError(f"plugin {spec!r}: {cls.__name__}() failed: {type(exc).__name__}: {exc}{where(exc)}") from exc
