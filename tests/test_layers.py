"""The package's layers: every import in swssd/ points down (or within its own layer), and no
module is part of an import circle. Every import counts: at module level, inside a function and
under TYPE_CHECKING, since each is a dependency a reader has to follow."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "swssd"

#: Modules at the package root that everything may use: they import only each other.
BASE = {"errors", "fields", "names", "schema", "backoff", "lua", "warm_restart"}
#: The entry points on top: the public facade (swssd/__init__.py), the command line, the
#: example plugins, which use the public API as any plugin does, and swssd.testing, the kit a
#: plugin's tests use. They may import anything.
TOP = {"", "cli", "console", "runner", "orch.examples", "testing"}
#: Each layer and the layers it may import (besides itself and the base modules); the package
#: docstrings say the same.
ALLOWED: dict[str, set[str]] = {
    "base": set(),
    "redis": set(),
    "ops": set(),
    "channels": {"redis"},
    "capture": {"ops"},
    "compat": {"redis", "channels"},
    "replay": {"redis", "channels", "capture"},
    "orch": {"redis", "channels", "ops", "capture"},
    "tools": {"redis", "channels", "ops", "capture", "orch"},
}
MAX_LINES = 600


def module_name(path: Path) -> str:
    """`swssd.a.b` for swssd/a/b.py (and swssd/a/b/__init__.py)."""
    parts = ["swssd", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str:
    """The layer a swssd module belongs to: 'top', 'base' or the sub-package's name."""
    inner = module.removeprefix("swssd").removeprefix(".")
    if any(inner == t or inner.startswith(t + ".") for t in TOP if t) or inner in TOP:
        return "top"
    head = inner.split(".")[0]
    if head in BASE:
        return "base"
    if head not in ALLOWED:
        raise AssertionError(f"swssd.{inner}: not in any layer; add its sub-package to tests/test_layers.py")
    return head


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(module: str, path: Path) -> Iterator[tuple[int, str]]:
    """(line, imported swssd module) for every import statement in the file."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "swssd":
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != "swssd":
                continue
            for alias in node.names:  # `from pkg import submodule` depends on the submodule
                sub = f"{source}.{alias.name}"
                yield node.lineno, sub if sub in MODULES else source


EDGES = {module: sorted({target for _, target in imports(module, path)}) for module, path in MODULES.items()}


def test_every_import_points_down() -> None:
    wrong = []
    for module, path in MODULES.items():
        here = layer(module)
        if here == "top":
            continue
        for line, target in imports(module, path):
            there = layer(target)
            if there in ("base", here) or there in ALLOWED[here]:
                continue
            wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {here} imports {target} ({there})")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def circles(edges: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, []):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in edges:
        if node not in index:
            visit(node)
    return found


def test_no_import_circle() -> None:
    assert circles(EDGES) == []


def test_circles_are_found() -> None:
    """The check itself: a two-module and a three-module circle are reported, a chain is not."""
    assert circles({"a": ["b"], "b": ["a"], "c": ["a"]}) == [["a", "b"]]
    assert circles({"a": ["b"], "b": ["c"], "c": ["a"]}) == [["a", "b", "c"]]
    assert circles({"a": ["b"], "b": ["c"], "c": []}) == []


@pytest.mark.parametrize(
    ("module", "expected"),
    [("swssd", "top"), ("swssd.orch.examples.demo", "top"), ("swssd.errors", "base"), ("swssd.lua", "base"),
     ("swssd.redis.connector", "redis"), ("swssd.channels.zmq.sockets", "channels"), ("swssd.orch.daemon", "orch")],
)
def test_layer_of(module: str, expected: str) -> None:
    assert layer(module) == expected


def test_no_module_over_the_limit() -> None:
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}, f"modules over {MAX_LINES} lines: {long}"
