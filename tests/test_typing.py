"""A plugin project checks against swssd's types: `py.typed` is shipped and `mypy --strict` passes
on plugins that subclass Orch and use Table, KeyOpFieldsValues, Retry and handle_batch()."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from test_plugin_files import page_block, plugin_source

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")

BATCH_PLUGIN = textwrap.dedent("""
    from __future__ import annotations

    from swssd import DEL_COMMAND, SET_COMMAND, KeyOpFieldsValues, Orch, ProducerStateTable, Retry, Table
    from swssd.orch import BatchOutcome


    class PortCountOrch(Orch):
        databases = ("STATE_DB",)
        batch_size = 256

        async def start(self) -> None:
            self.counts = Table(self.connector("STATE_DB"), "PORT_COUNT")
            self.out = ProducerStateTable(self.connector("APPL_DB"), "PORT_SUMMARY")
            self.limit = int(self.options.get("limit", 10))

        async def handle_batch(self, table: str, tasks: list[KeyOpFieldsValues]) -> BatchOutcome:
            outcome: list[BaseException | None] = []
            for task in tasks:
                if task.op == DEL_COMMAND:
                    await self.counts.delete(task.key)
                    outcome.append(None)
                elif len(task.fvs) > self.limit:
                    outcome.append(Retry(f"{task.key}: too many fields"))
                else:
                    await self.counts.hset(task.key, "fields", str(len(task.fvs)))
                    await self.out.set(task.key, [(f, v) for f, v in task.fvs])
                    outcome.append(None)
            self.log.info("batch", table=table, tasks=len(tasks), op=SET_COMMAND)
            return outcome
""")


def mypy_strict(tmp_path: Path, *files: str) -> subprocess.CompletedProcess[str]:
    """mypy --strict in a directory of its own, as a plugin author runs it after the README's install:
    no PYTHONPATH, swssd found as the install left it (an editable install in compat mode is a plain
    path in a .pth file, which mypy follows; setuptools' default import finder is invisible to it)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / ".mypy_cache"), *files],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )


def test_py_typed_is_shipped() -> None:
    assert (ROOT / "swssd" / "py.typed").is_file()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["swssd"]


def test_mypy_strict_passes_on_plugins(tmp_path: Path) -> None:
    (tmp_path / "mirror_orch.py").write_text(plugin_source())
    (tmp_path / "port_count.py").write_text(BATCH_PLUGIN)
    out = mypy_strict(tmp_path, "mirror_orch.py", "port_count.py")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found in 2 source files" in out.stdout


def test_mypy_strict_passes_on_the_plugin_test_and_swssd_testing(tmp_path: Path) -> None:
    """The README's plugin test, on swssd.testing's types: a plugin project's tests check too."""
    (tmp_path / "mirror_orch.py").write_text(plugin_source())
    (tmp_path / "test_mirror_orch.py").write_text(page_block("python", "def test_a_route_waits_for_its_port"))
    out = mypy_strict(tmp_path, "mirror_orch.py", "test_mirror_orch.py")
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_sees_the_real_types(tmp_path: Path) -> None:
    """Not Any: a wrong use of the API is an error."""
    (tmp_path / "wrong.py").write_text(textwrap.dedent("""
        from swssd import KeyOpFieldsValues, Orch, Table

        class WrongOrch(Orch):
            async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
                speed: int = await Table(self.connector("STATE_DB"), "PORT_TABLE").hget(task.key, "speed")
                self.log.info("speed", value=speed)
    """))
    out = mypy_strict(tmp_path, "wrong.py")
    assert out.returncode == 1
    assert 'expression has type "str | None", variable has type "int"' in out.stdout, out.stdout


def test_swssd_passes_mypy_strict(tmp_path: Path) -> None:
    """The package itself, as pyproject.toml's [tool.mypy] checks it (strict, pydantic plugin)."""
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / ".mypy_cache")],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found" in out.stdout, out.stdout
