"""The site's generated references, built from the code at every `mkdocs build`, so they cannot
drift from it: the config reference from the pydantic models of swssd/orch/config.py, the metrics
reference from the daemon's collector (swssd/ops/metrics.py), the CLI reference from the argparse
parsers (swssd/cli.py, swssd/replay/cli.py), the API reference's entries from the public names
of swssd/__init__.py (mkdocstrings renders their docstrings and type hints).

A page asks for one with a marker line (`<!-- swssd:config-reference -->`, `metrics-reference`,
`cli-reference`, `api-reference`; `benchmarks` brings in BENCHMARKS.md), replaced here (mkdocs'
`on_page_markdown` hook). tests/test_docs.py reads the same entries and fails when one has no
description, so an undocumented key, metric or option cannot be added.

A config field's description is its pydantic `description`, else the `#:` comment lines just
above it in the class (the project's convention for documenting attributes).
"""

from __future__ import annotations

import argparse
import inspect
import re
import textwrap
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import annotated_types
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

MARKER = re.compile(r"^<!-- swssd:(?P<name>[a-z-]+) -->$", re.M)

# -- config ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigKey:
    """One key of the TOML config: in which table, its type, default and what it does."""

    section: str  # "[redis]", "[[orchs]]", "[[orchs]] tables", "" for the top level
    key: str
    type: str
    default: str
    description: str

    @property
    def dotted(self) -> str:
        """orchs.tables.kind, redis.url, plugin_path: the key's path through the models."""
        words = re.findall(r"[\w]+", self.section)
        return ".".join([*words, self.key])


def comment_descriptions(model: type[BaseModel]) -> dict[str, str]:
    """field -> the `#:` comment lines just above its annotation in the class body."""
    found: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if not (isinstance(klass, type) and issubclass(klass, BaseModel)) or klass is BaseModel:
            continue
        try:
            lines = textwrap.dedent(inspect.getsource(klass)).splitlines()
        except (OSError, TypeError):
            continue
        comment: list[str] = []
        for line in lines[1:]:
            stripped = line.strip()
            if stripped.startswith("#:"):
                comment.append(stripped[2:].strip())
                continue
            field = re.match(r"^\s{4}(\w+)\s*:", line)
            if field and comment:
                found[field[1]] = " ".join(comment)
            comment = []
    return found


def _nested_model(annotation: Any) -> tuple[type[BaseModel], bool] | None:
    """(model, is a list) when a field holds a section (an optional one too) or a list of them."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        present = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(present) == 1:
            annotation = present[0]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    if typing.get_origin(annotation) is list:
        (item,) = typing.get_args(annotation)
        if isinstance(item, type) and issubclass(item, BaseModel):
            return item, True
    return None


def type_text(annotation: Any) -> str:
    """A TOML reader's name for a field's type: `seconds`, `string`, `"a" | "b"`, `list of path`."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_text(args[0])
    if origin in (typing.Union, types.UnionType):
        shown = [type_text(a) for a in args if a is not type(None)]
        return " | ".join(shown)
    if origin is Literal:
        return " | ".join(f'`"{a}"`' if isinstance(a, str) else f"`{a}`" for a in args)
    if origin is list:
        return f"list of {type_text(args[0])}" if args else "list"
    if origin is dict:
        return "table"
    names = {bool: "bool", int: "integer", float: "number", str: "string", Path: "path",
             SecretStr: "string (secret)"}
    if annotation in names:
        return names[annotation]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    return getattr(annotation, "__name__", str(annotation))


def bounds_text(info: FieldInfo) -> str:
    """The field's limits as a reader checks them: `> 0, ≤ 86400`, `1 to 64 characters`."""
    parts = []
    metadata = list(info.metadata)
    # a Seconds field carries its bounds inside the Annotated alias
    annotation = info.annotation
    for arg in typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
            else (annotation,):
        if typing.get_origin(arg) is typing.Annotated:
            for extra in typing.get_args(arg)[1:]:
                metadata += getattr(extra, "metadata", [extra])
    for item in metadata:
        for attr, sign in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
            if isinstance(item, getattr(annotated_types, attr.capitalize())):
                value = getattr(item, attr)
                parts.append(f"{sign} {value:g}" if isinstance(value, float) else f"{sign} {value:,}")
        if isinstance(item, annotated_types.MinLen) and item.min_length > 0:
            parts.append(f"at least {item.min_length} long")
        if isinstance(item, annotated_types.MaxLen):
            parts.append(f"at most {item.max_length} long")
        pattern = getattr(item, "pattern", None)
        if isinstance(pattern, str):
            parts.append(f"matches `{pattern}`")
    return ", ".join(parts)


def default_text(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    value = info.get_default(call_default_factory=True)
    if value is None or value is PydanticUndefined:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str | Path):
        return f'`"{value}"`'
    if isinstance(value, float) and value.is_integer():
        return f"`{value:g}`"
    if isinstance(value, BaseModel):
        return ""
    return f"`{value!r}`"


def config_keys(model: type[BaseModel] | None = None, section: str = "") -> Iterator[ConfigKey]:
    """Every key the config accepts, section by section, in the models' order."""
    if model is None:
        from swssd.orch.config import Config

        model = Config
    comments = comment_descriptions(model)
    nested: list[tuple[str, type[BaseModel]]] = []
    for name, info in model.model_fields.items():
        inner = _nested_model(info.annotation)
        if inner is not None:
            sub, is_list = inner
            if section:
                where = f"{section} {name}" if is_list else f"{section.strip('[]')}.{name}"
                where = where if is_list else f"[{where}]"
            else:
                where = f"[[{name}]]" if is_list else f"[{name}]"
            nested.append((where, sub))
            if not is_list:
                continue
        bounds = bounds_text(info)
        type_shown = type_text(info.annotation) + (f" ({bounds})" if bounds else "")
        description = info.description or comments.get(name, "")
        if inner is not None:  # a list of tables, listed again with its own keys below
            sub_where = nested[-1][0]
            description = description or (inner[0].__doc__ or "").strip()
            description = " ".join(description.split()) + f" Its keys: {sub_where} below."
            type_shown = "list of tables"
        yield ConfigKey(section, name, type_shown, default_text(info), " ".join(description.split()))
    for where, sub in nested:
        yield from config_keys(sub, where)


def section_descriptions() -> dict[str, str]:
    """A section's heading text: its model's docstring."""
    from swssd.orch.config import Config

    found: dict[str, str] = {}

    def walk(model: type[BaseModel], section: str) -> None:
        for name, info in model.model_fields.items():
            inner = _nested_model(info.annotation)
            if inner is None:
                continue
            sub, is_list = inner
            if section:
                where = f"{section} {name}" if is_list else f"[{section.strip('[]')}.{name}]"
            else:
                where = f"[[{name}]]" if is_list else f"[{name}]"
            found[where] = " ".join((info.description or sub.__doc__ or "").split())
            walk(sub, where)

    walk(Config, "")
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def config_reference() -> str:
    sections: dict[str, list[ConfigKey]] = {}
    for key in config_keys():
        sections.setdefault(key.section, []).append(key)
    about = section_descriptions()
    out = []
    for section, keys in sections.items():
        title = section or "top level"
        out.append(f"### `{title}`\n" if section else "### Top level\n")
        if about.get(section):
            out.append(about[section] + "\n")
        out.append("| key | type | default | what it does |\n| --- | --- | --- | --- |")
        for k in keys:
            out.append(f"| `{k.key}` | {_cell(k.type)} | {_cell(k.default)} | {_cell(k.description)} |")
        out.append("")
    return "\n".join(out)


# -- metrics --------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricInfo:
    name: str  # as scraped: counters end in _total
    type: str
    labels: tuple[str, ...]
    help: str


class _Zero:
    """Any figure the collector asks of a daemon it was not told about: zero, empty, false. The
    collector is run over one table, one ZMQ server and one timer, so every family it can yield is seen."""

    def __getattr__(self, name: str) -> Any:
        return 0

    def __call__(self, *args: Any) -> Any:
        return 0


class _Stats(_Zero):
    @property
    def latency_counts(self) -> list[int]:
        from swssd.ops.metrics import LATENCY_BUCKETS

        return [0] * (len(LATENCY_BUCKETS) + 1)


class _Worker(_Zero):
    db_name = "APPL_DB"
    table = "T"
    stats = _Stats()
    alive = True
    stalled = False


class _TimerRun(_Zero):
    orch_name = "O"
    name = "t"
    stats = _Stats()
    stalled = False


class _DeadLetters(_Zero):
    sizes: ClassVar = {"APPL_DB": 0}


class _Daemon(_Zero):
    workers: ClassVar = [_Worker()]
    timer_runs: ClassVar = [_TimerRun()]
    dead_letters = _DeadLetters()
    select = _Zero()
    zmq_servers: ClassVar = {"tcp://127.0.0.1:8100": _Zero()}
    redis_up = True
    serving = True


def metrics() -> list[MetricInfo]:
    """Every family the daemon's collector yields, as a scrape names it."""
    from prometheus_client.core import Metric

    from swssd.ops.metrics import DaemonCollector, LoopProbe

    found = []
    family: Metric
    for family in DaemonCollector(_Daemon(), LoopProbe()).collect():  # type: ignore[arg-type]
        name = family.name + ("_total" if family.type == "counter" else "")
        labels = sorted({label for s in family.samples for label in s.labels if label not in ("le",)})
        found.append(MetricInfo(name, family.type, tuple(labels), " ".join(family.documentation.split())))
    return found


def metrics_reference() -> str:
    out = ["| metric | type | labels | what it counts |", "| --- | --- | --- | --- |"]
    for m in metrics():
        labels = ", ".join(f"`{label}`" for label in m.labels)
        out.append(f"| `{m.name}` | {m.type} | {labels} | {_cell(m.help)} |")
    return "\n".join(out) + "\n"


# -- command line ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CliOption:
    command: str  # "swssd produce", "swssd replay stats"
    option: str  # "--batch N", "INPUT ..."
    help: str


def _parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(command line, parser) for `swssd`, each sub-command, `swssd replay` and each of its own."""
    from swssd import cli
    from swssd.replay import cli as replay_cli

    for top in (cli.build_parser(), replay_cli.build_parser()):
        yield top.prog, top
        for action in top._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    if name == "replay" and top.prog == "swssd":
                        continue  # its own parser, the second `top`
                    yield f"{top.prog} {name}", sub


def _subcommand_help(parser: argparse.ArgumentParser) -> dict[str, str]:
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                found[choice.dest] = choice.help or ""
    return found


def _option_text(action: argparse.Action) -> str:
    if not action.option_strings:
        name = action.metavar or action.dest
        return f"{name} ..." if action.nargs in ("+", "*") else str(name)
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    metavar = action.metavar or action.dest.upper()
    return ", ".join(f"{o} {metavar}" for o in action.option_strings)


def _documented(action: argparse.Action) -> bool:
    """Whether an option is listed: everything but help and what argparse.SUPPRESS hides."""
    return not isinstance(action, argparse._HelpAction | argparse._SubParsersAction) \
        and action.help != argparse.SUPPRESS


def cli_options() -> Iterator[CliOption]:
    """Every option and argument of every command, with its help."""
    for command, parser in _parsers():
        for action in parser._actions:
            if _documented(action):
                yield CliOption(command, _option_text(action), " ".join((action.help or "").split()))


def cli_commands() -> list[tuple[str, str]]:
    """(command line, its one-line help) of every sub-command."""
    found = []
    for command, _ in _parsers():
        if " " not in command:
            continue
        parent, name = command.rsplit(" ", 1)
        for prog, top in _parsers():
            if prog == parent:
                found.append((command, _subcommand_help(top).get(name, "")))
    return found


def _default(action: argparse.Action) -> str:
    if action.default in (None, False, [], argparse.SUPPRESS) or action.nargs == 0 or not action.option_strings:
        return ""
    if action.help and "default" in action.help:
        return ""
    return f" (default: `{action.default}`)"


def cli_reference() -> str:
    helps = dict(cli_commands())
    out = []
    for command, parser in _parsers():
        out.append(f"### `{command}`\n")
        if command in helps:
            out.append(helps[command][:1].upper() + helps[command][1:] + ".\n")
        if parser.description:
            out.append(" ".join(parser.description.split()) + "\n")
        out.append(f"```text\n{parser.format_usage().strip()}\n```\n")
        rows = [a for a in parser._actions if _documented(a)]
        if rows:
            out.append("| option | what it does |\n| --- | --- |")
            for a in rows:
                out.append(f"| `{_cell(_option_text(a))}` | {_cell(' '.join((a.help or '').split()) + _default(a))} |")
            out.append("")
        if parser.epilog:
            out.append(" ".join(parser.epilog.split()) + "\n")
    return "\n".join(out)


# -- API ----------------------------------------------------------------------------------


def api_reference() -> str:
    """One mkdocstrings entry per public name of swssd/__init__.py, under its module's heading."""
    import swssd

    out = []
    for module, names in swssd._MODULES.items():
        public = [n for n in names if n in swssd.__all__]
        if not public:
            continue
        out.append(f"## `swssd{module}`\n")
        for name in public:
            out.append(f"::: swssd{module}.{name}\n    options:\n      heading_level: 3\n")
    return "\n".join(out)


# -- pages kept at the top of the repository ----------------------------------------------

#: The repository's root, found from this file (docs/hooks/), whatever directory mkdocs runs in.
ROOT = Path(__file__).resolve().parents[2]


def benchmarks() -> str:
    """BENCHMARKS.md, where the project records its figures with their commands, as a page."""
    return (ROOT / "BENCHMARKS.md").read_text()


# -- the hook -------------------------------------------------------------------------------

GENERATORS = {
    "config-reference": config_reference,
    "metrics-reference": metrics_reference,
    "cli-reference": cli_reference,
    "api-reference": api_reference,
    "benchmarks": benchmarks,
}


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """mkdocs: replace each marker with its reference; an unknown marker fails the build."""

    def replace(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in GENERATORS:
            raise ValueError(f"unknown reference marker {name!r}; known: {sorted(GENERATORS)}")
        return GENERATORS[name]()

    return MARKER.sub(replace, markdown)
