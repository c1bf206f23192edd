"""Running `swssd run` as a real subprocess for tests, and checking what its handlers saw."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from swssd.redis.embedded_redis import EmbeddedRedis

TESTS_DIR = Path(__file__).resolve().parent

State = dict[tuple[str, str], dict[str, str]]
Record = tuple[str, str, str, list[tuple[str, str]]]


# -- config ---------------------------------------------------------------------------------


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def to_toml(doc: Mapping[str, Any]) -> str:
    """TOML for the config shapes the tests use: sections, [[orchs]] with inline tables inside."""
    lines: list[str] = []
    for section, body in doc.items():
        if section == "orchs":
            for orch in body:
                lines.append("[[orchs]]")
                lines += [f"{k} = {_toml_value(v)}" for k, v in orch.items()]
        else:
            lines.append(f"[{section}]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in body.items()]
    return "\n".join(lines) + "\n"


def write_config(tmp_path: Path, server: EmbeddedRedis, doc: dict[str, Any], name: str = "swssd.toml") -> Path:
    """A config file using the test redis-server (the daemon goes over its unix socket); a
    `redis` section in `doc` adds to (or overrides) the database_config this sets."""
    db_config = server.write_database_config(tmp_path / "database_config.json")
    redis = {"database_config": str(db_config), **doc.get("redis", {})}
    doc = {"logging": {"format": "json", "level": "info"}, **doc, "redis": redis}
    path = tmp_path / name
    path.write_text(to_toml(doc))
    return path


# -- the process ----------------------------------------------------------------------------


class DaemonProcess:
    """`python -m swssd.cli run --config FILE`, stderr (JSON log lines) to a file."""

    def __init__(
        self, config: Path, log: Path, preexec_fn: Callable[[], None] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """`env` adds to the test's own environment (NOTIFY_SOCKET, say)."""
        self.config = config
        self.log_path = log
        base = dict(os.environ)
        base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS_DIR), base.get("PYTHONPATH")]))
        base.pop("SWSSD_DB_CONFIG", None)
        env = {**base, **(env or {})}
        self._log_file = open(log, "ab")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "swssd.cli", "run", "--config", str(config)],
            stdout=self._log_file, stderr=subprocess.STDOUT, env=env, preexec_fn=preexec_fn,
        )

    def logs(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                out.append({"event": line})
        return out

    def events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.logs() if e.get("event") == name]

    def wait_for_log(self, name: str, timeout: float = 30.0, count: int = 1) -> list[dict[str, Any]]:
        found = wait_until(lambda: len(self.events(name)) >= count or self.proc.poll() is not None, timeout)
        events = self.events(name)
        if not found or len(events) < count:
            tail = self.log_path.read_text()[-3000:]
            raise AssertionError(f"no {name!r} log line (exit {self.proc.poll()}):\n{tail}")
        return events

    def wait_ready(self, timeout: float = 30.0) -> None:
        self.wait_for_log("ready", timeout)

    def signal(self, sig: int = signal.SIGTERM) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout: float = 30.0) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            self._log_file.close()

    def stop(self, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log_file.close()


def wait_until(check: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval)
    return check()


# -- records and the model ------------------------------------------------------------------


def read_records(path: Path) -> list[Record]:
    if not path.exists():
        return []
    out: list[Record] = []
    for line in path.read_text().splitlines():
        if line.endswith("]"):  # a line still being written is left for the next read
            table, key, op, fvs = json.loads(line)
            out.append((table, key, op, [tuple(fv) for fv in fvs]))
    return out


def fold(records: Iterable[Record], state: State | None = None) -> State:
    """The consumer-side table the handled tasks describe: SET merges fields, DEL removes."""
    state = {} if state is None else {k: dict(v) for k, v in state.items()}
    for table, key, op, fvs in records:
        if op == "DEL":
            state.pop((table, key), None)
        else:
            state.setdefault((table, key), {}).update(fvs)
    return state


def check_values_advance(records: Iterable[Record]) -> None:
    """Values are `v<seq>` with seq growing per write: per key and field, each handled value
    must be newer than the one handled before (nothing stale, nothing reordered)."""
    last: dict[tuple[str, str, str], int] = {}
    for table, key, op, fvs in records:
        assert op in ("SET", "DEL"), op
        assert (op == "DEL") == (not fvs), (table, key, op, fvs)
        for field, value in fvs:
            seq = int(value[1:])
            prev = last.get((table, key, field), -1)
            assert seq > prev, f"{table} {key} {field}: v{seq} handled after v{prev}"
            last[(table, key, field)] = seq


def health(port: int) -> tuple[int, str]:
    """The daemon's /health on `port`: (status, body), or (0, why) when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)
