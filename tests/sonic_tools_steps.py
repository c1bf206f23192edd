"""How sonic_tools_suite.py runs one step of an unmodified SONiC program on one side (the binding
or the layer) and records what it did; shared by the suite and its scenario modules."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOCKET_DIR = "/var/run/redis"
SOCKET = f"{SOCKET_DIR}/redis.sock"
#: seconds a program's step may take
STEP_TIMEOUT = 60
#: placeholders for modules the programs import but do not use on the paths run here, written
#: only when the interpreter lacks the real one (they need C libraries or headers absent here)
PLACEHOLDERS = {
    "ldap": '"""python-ldap is not installed here (it needs the OpenLDAP headers)."""\n',
    # sonic_installer's Aboot bootloader imports it; the programs only ask which bootloader runs
    "M2Crypto": '"""M2Crypto is not installed here."""\nX509 = None\n',
    # sonic_yang's CFFI binding to libyang 3; used only when YANG validation is on, which it is not
    "libyang": '"""libyang (libyang3-py3) is not installed here."""\n',
}


@dataclass
class Env:
    """Where a run's programs come from and how they are started."""

    python: str
    trees: dict[str, Path]
    mode: str                    # "binding" or "layer"
    binding_env: str
    scratch: Path
    stub_log: Path

    def command(self, argv: list[str], paths: list[Path],
                bins: Iterable[Path] = ()) -> tuple[list[str], dict[str, str]]:
        """`python argv...` with `swsscommon` the binding's or the layer's, `paths` importable and
        `bins` on PATH after the stubs (whose `python3` is this interpreter, for the programs'
        `#!/usr/bin/env python3` scripts)."""
        extra = os.pathsep.join(str(p) for p in paths)
        search = os.pathsep.join([str(self.scratch / "stubs"), *(str(b) for b in bins), os.environ["PATH"]])
        env = dict(os.environ, PATH=search, STUB_LOG=str(self.stub_log), PYTHONDONTWRITEBYTECODE="1",
                   PYTHONHASHSEED="0")
        if self.mode == "layer":
            env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "compat"), str(ROOT), extra])
            return [self.python, *argv], env
        env["PYTHONPATH"] = os.pathsep.join([str(self.scratch / "binding_shim"), extra])
        script = 'source "$0" && exec "$1" "${@:2}"'  # the env file puts the binding first on PYTHONPATH
        return ["bash", "-c", script, self.binding_env, self.python, *argv], env

    def placeholders(self) -> Path:
        """A directory (for `paths`) with PLACEHOLDERS for the modules this interpreter lacks."""
        shim = self.scratch / "deps_shim"
        if not shim.exists():
            shim.mkdir()
            for module, text in PLACEHOLDERS.items():
                if subprocess.run([self.python, "-c", f"import {module}"], capture_output=True).returncode != 0:
                    (shim / f"{module}.py").write_text(text)
        return shim


@dataclass
class Result:
    """What one scenario did on one side."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    redis: dict[str, Any] = field(default_factory=dict)
    reactions: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)


@dataclass
class Scenario:
    """A program's steps, the trees it needs and the rows it starts from: `seed` in CONFIG_DB,
    `seed_dbs` in other databases by number."""


    name: str
    needs: tuple[str, ...]
    run: Callable[[Env, Result], None]
    seed: dict[str, dict[str, str]] = field(default_factory=dict)
    seed_dbs: dict[int, dict[str, dict[str, str]]] = field(default_factory=dict)
    #: the Redis state ("db/key" -> value) made comparable where two runs differ by nature
    normalize: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    #: False when the program runs its commands from several threads: compared as a multiset
    ordered_reactions: bool = True


def redis_cli(*args: str) -> str:
    return subprocess.run(["redis-cli", "-s", SOCKET, *args], capture_output=True, text=True, check=True).stdout


def run_step(env: Env, result: Result, argv: list[str], paths: list[Path], cwd: Path | None = None,
             bins: Iterable[Path] = (), label: list[str] | None = None) -> None:
    """One process; `label` names it in the report (default: argv, less `-c` and its code)."""
    command, proc_env = env.command(argv, paths, bins)
    try:
        done = subprocess.run(command, cwd=cwd or env.scratch, env=proc_env, capture_output=True, text=True,
                              timeout=STEP_TIMEOUT)
        rc: int | str = done.returncode
        out, err = done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = "timed out", _text(exc.stdout), _text(exc.stderr)
    result.steps.append({"argv": label or (argv[1:] if argv[0] == "-c" else argv), "rc": rc, "stdout": out,
                         "stderr_tail": err[-800:]})


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else data or ""


def python_snippet(env: Env, result: Result, code: str, paths: list[Path]) -> None:
    run_step(env, result, ["-c", code], paths)


def run_daemon(env: Env, result: Result, argv: list[str], paths: list[Path], changes: Iterable[tuple[str, ...]],
               start: float = 3.0, between: float = 0.5, bins: Iterable[Path] = ()) -> None:
    """A daemon started on the seeded databases, then each change (redis-cli arguments) made with
    `between` seconds to react; stopped by SIGTERM. What it printed and whether it was still
    running is its step; what it ran is in the stubs' log. Each wait lasts until the stubs' log
    has also been still for a while, so a daemon slowed by a loaded machine finishes reacting to
    one change before the next (on both sides alike)."""
    command, proc_env = env.command(argv, paths, bins)
    daemon = subprocess.Popen(command, cwd=env.scratch, env=proc_env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        settle(env.stub_log, start)
        for change in changes:
            redis_cli(*change)
            settle(env.stub_log, between)
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        try:
            out, err = daemon.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
            out, err = daemon.communicate()
    result.steps.append({"argv": [Path(argv[0]).name, *argv[1:]], "running_at_end": daemon.returncode in (-15, 0, 143),
                         "stdout": out, "stderr_tail": err[-1500:]})


def settle(log: Path, at_least: float, still: float = 1.0, at_most: float = 20.0) -> None:
    """Wait `at_least` seconds, then until `log` has not grown for `still` seconds (or `at_most`
    more seconds have passed)."""
    time.sleep(at_least)
    deadline = time.monotonic() + at_most
    size, since = _size(log), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - since < still:
        time.sleep(0.2)
        if (now := _size(log)) != size:
            size, since = now, time.monotonic()


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0
