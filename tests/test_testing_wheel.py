"""A plugin's project with only swssd installed from its wheel (no swssd source tree anywhere on
its path) tests its Orch with swssd.testing and the pytest plugin: the README's plugin and its
test (Retry until the port is up, backoff then dead letter, merge, DaemonRunner end to end),
run by pytest in a fresh virtual environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from test_plugin_files import page_block, plugin_source

ROOT = Path(__file__).resolve().parent.parent
#: what the wheel is built from: the package and what pyproject.toml and setup.py name
SOURCES = ["pyproject.toml", "setup.py", "README.md", "swssd"]


def _build_wheel(tmp_path: Path) -> Path:
    source = tmp_path / "source"  # a copy: building writes build/ and *.egg-info beside the sources
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        else:
            shutil.copy(ROOT / name, source / name)
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), f"{source}/"],
        capture_output=True, text=True, timeout=600,
    )
    if out.returncode != 0 and ("No matching distribution" in out.stderr or "Could not find a version" in out.stderr):
        pytest.skip("building swssd's wheel needs setuptools>=68 (pyproject's build requirement) from a package "
                    f"index, and none answered: {out.stderr.strip()[-300:]}")
    assert out.returncode == 0, out.stderr[-3000:]
    [wheel] = (tmp_path / "dist").glob("swssd-*.whl")
    return wheel


def _fresh_venv(tmp_path: Path, wheel: Path) -> Path:
    """A new virtual environment with the wheel installed. Its dependencies (redis, pydantic,
    pytest, pytest-asyncio, ...) are this environment's, through a path in a .pth file: a path
    named there is searched, but its own .pth files (this checkout's editable install) are not
    read, so `import swssd` can only find the wheel's."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                          "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_a_plugin_project_tests_with_the_installed_kit(tmp_path: Path) -> None:
    python = _fresh_venv(tmp_path, _build_wheel(tmp_path))
    project = tmp_path / "project"
    project.mkdir()
    (project / "mirror_orch.py").write_text(plugin_source())
    test = page_block("python", "def test_a_route_waits_for_its_port")
    (project / "test_mirror_orch.py").write_text(test)
    (project / "test_installed.py").write_text(
        "import swssd\nimport swssd.testing\n\n\n"
        "def test_swssd_is_the_wheels() -> None:\n"
        f"    assert swssd.__file__.startswith({str(tmp_path / 'venv')!r}), swssd.__file__\n"
        f"    assert {str(ROOT)!r} not in swssd.__file__\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SWSSD_DB_CONFIG")}
    out = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
                         capture_output=True, text=True, timeout=300, cwd=project, env=env)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    tests = test.count("\nasync def test_") + 1
    assert f"{tests} passed" in out.stdout, out.stdout[-2000:]
