"""DaemonRunner: `swssd run --config FILE` as a real process for an end-to-end test, as kopf's
KopfRunner runs an operator: started in the background, waited on until ready, its log lines
and metrics at hand, stopped with SIGTERM and its exit status kept.

    with DaemonRunner(config) as daemon:      # waits for the daemon's "ready" line (every table served)
        ...                                    # produce, then wait_until(...) on what the plugin wrote
    assert daemon.exit_status == 0

Given a dict instead of a file, it writes the config (TOML) beside its log, with `redis` (an
EmbeddedRedis) as the Redis and JSON log lines, and `[metrics] enabled = true` without a
port gets a free one. Without metrics in the config, `metrics()` is unavailable.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from ..redis.embedded_redis import EmbeddedRedis, free_port


class DaemonError(AssertionError):
    """The daemon did not get ready (or exited): the message holds the end of its log."""


def to_toml(doc: Mapping[str, Any]) -> str:
    """TOML for a daemon config given as a dict: sections of scalars and lists, [[orchs]] entries
    with tables, options and retry as inline tables."""
    lines: list[str] = []
    for section, body in doc.items():
        if section == "orchs":
            for orch in body:
                lines.append("[[orchs]]")
                lines += [f"{k} = {_value(v)}" for k, v in orch.items()]
        elif isinstance(body, Mapping):
            lines.append(f"[{section}]")
            lines += [f"{k} = {_value(v)}" for k, v in body.items()]
        else:
            lines.insert(0, f"{section} = {_value(body)}")
    return "\n".join(lines) + "\n"


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (str, Path)):
        return json.dumps(str(v))
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"no TOML for {type(v).__name__}: {v!r}")


class DaemonRunner:
    """The daemon as a subprocess (see the module docstring). `directory` holds its log (and a
    config written from a dict); a temporary one, removed at stop, when not given."""

    def __init__(
        self,
        config: Path | str | Mapping[str, Any],
        *,
        redis: EmbeddedRedis | None = None,
        directory: Path | None = None,
        env: Mapping[str, str] | None = None,
        ready_timeout: float = 30.0,
    ) -> None:
        self._tmp = None if directory is not None else tempfile.TemporaryDirectory(prefix="swssd-daemon-")
        self.directory = Path(directory if directory is not None else self._tmp.name)  # type: ignore[union-attr]
        self.directory.mkdir(parents=True, exist_ok=True)
        if isinstance(config, Mapping):
            self.config = self._write_config(config, redis)
        else:
            self.config = Path(config)
        self.log_path = self.directory / "swssd.log"
        self.env = {**os.environ, **(env or {})}
        self.ready_timeout = ready_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        #: the exit status, once stopped
        self.exit_status: int | None = None

    def _write_config(self, doc: Mapping[str, Any], redis: EmbeddedRedis | None) -> Path:
        body = dict(doc)
        if redis is not None:
            db_config = redis.write_database_config(self.directory / "database_config.json")
            body["redis"] = {"database_config": str(db_config), **body.get("redis", {})}
        body["logging"] = {"format": "json", "level": "info", **body.get("logging", {})}
        metrics = dict(body.get("metrics", {}))
        if metrics.get("enabled") and not metrics.get("port"):  # a free port of its own, not 9750
            body["metrics"] = {**metrics, "port": free_port()}
        path = self.directory / "swssd.toml"
        path.write_text(to_toml(body))
        path.chmod(0o600)
        return path

    # -- lifetime -------------------------------------------------------------------------

    def start(self) -> DaemonRunner:
        """Start the daemon and wait until it is ready (every table consumed), or raise DaemonError."""
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "swssd.cli", "run", "--config", str(self.config)],
                stdout=log, stderr=subprocess.STDOUT, env=self.env,
            )
        self.wait_for("ready", timeout=self.ready_timeout)
        return self

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, then wait for the exit (SIGKILL after `timeout`); the exit status."""
        if self.proc is None:
            raise RuntimeError("DaemonRunner: not started")
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.exit_status = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.exit_status = self.proc.wait()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        return self.exit_status

    def __enter__(self) -> DaemonRunner:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.proc is not None and self.exit_status is None:
            self.stop()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- what it says ---------------------------------------------------------------------

    @property
    def output(self) -> str:
        """Everything the daemon wrote (stdout and stderr) so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    @property
    def log_lines(self) -> list[dict[str, Any]]:
        """Its log lines, parsed (a line that is no JSON comes as {"event": line})."""
        out = []
        for line in self.output.splitlines():
            try:
                parsed = json.loads(line)
            except json.JSONDecodeError:
                parsed = None
            out.append(parsed if isinstance(parsed, dict) else {"event": line})
        return out

    def events(self, event: str) -> list[dict[str, Any]]:
        """The log lines whose event is `event` ("ready", "task dead-lettered", ...)."""
        return [line for line in self.log_lines if line.get("event") == event]

    def wait_for(self, event: str, count: int = 1, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Until `count` log lines of `event` were written; raises DaemonError if the daemon exits
        first or `timeout` passes."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.events(event)
            if len(found) >= count:
                return found
            exited = self.proc is not None and self.proc.poll() is not None
            if exited or time.monotonic() > deadline:
                why = f"exited with {self.proc.poll()}" if exited and self.proc else f"not in {timeout:g} s"
                raise DaemonError(f"no {event!r} log line ({why}); the daemon's log ends:\n{self.output[-3000:]}")
            time.sleep(0.02)

    def _endpoint(self, path: str) -> str:
        served = self.events("serving metrics")
        if not served:
            raise DaemonError("the daemon serves no metrics: set [metrics] enabled = true in its config")
        return str(served[-1]["url"]).removesuffix("/metrics") + path

    def health(self, timeout: float = 5.0) -> tuple[int, str]:
        """GET /health (needs [metrics]): 200 and "OK" while healthy, else 503 and the reason."""
        try:
            with urllib.request.urlopen(self._endpoint("/health"), timeout=timeout) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def metrics(self, timeout: float = 5.0) -> dict[str, float]:
        """The /metrics endpoint's samples, `name{label="value",...}` -> value (needs [metrics])."""
        with urllib.request.urlopen(self._endpoint("/metrics"), timeout=timeout) as reply:
            text = reply.read().decode()
        samples = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                samples[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
        return samples


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 10.0, interval: float = 0.02) -> None:
    """Await `check()` until it is true; AssertionError after `timeout` seconds: for what a
    daemon in another process does, in an async test."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout:g} s: {getattr(check, '__name__', check)}")
        await asyncio.sleep(interval)


def wait_until(check: Callable[[], bool], timeout: float = 10.0, interval: float = 0.02) -> bool:
    """Poll `check` until it is true (True) or `timeout` seconds pass (False): for what a daemon
    in another process does, which a test cannot await."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True
