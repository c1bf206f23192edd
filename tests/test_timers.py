"""Plugin timers in process: what `@timer` declares, the config's overrides and their checks
(also through `swssd check`), and one TimerRun's schedule, time-out and errors."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from swssd import Orch, timer
from swssd.errors import ConfigError
from swssd.orch.config import Config
from swssd.orch.config_file import config_from_dict
from swssd.orch.orch import TimerSpec, declared_timers
from swssd.orch.timers import TimerRun, Timers, resolve_timers

TESTS = Path(__file__).resolve().parent


class Polling(Orch):
    @timer(5.0, jitter=1.0)
    async def poll(self) -> None: ...

    @timer(60.0, name="flush", first_delay=0.0)
    async def write_out(self) -> None: ...


class Quieter(Polling):
    async def poll(self) -> None:  # overridden without @timer: no timer any more
        ...


def config(timers: dict[str, object] | None = None, **daemon: object) -> Config:
    return config_from_dict({
        "daemon": daemon,
        "orchs": [{"plugin": "x:Polling", "name": "p", "tables": [{"table": "T"}], "timers": timers or {}}],
    })


def test_declared_timers_follow_the_class_and_its_bases() -> None:
    assert declared_timers(Polling) == [
        TimerSpec("poll", 5.0, 1.0, None, method="poll"),
        TimerSpec("flush", 60.0, 0.0, 0.0, method="write_out"),
    ]
    assert [t.name for t in declared_timers(Quieter)] == ["flush"]
    with pytest.raises(TypeError, match="async def"):
        timer(1.0)(lambda self: None)  # type: ignore[type-var]


def test_the_config_overrides_a_timer_per_plugin() -> None:
    cfg = config({"poll": {"interval": 0.5, "jitter": 0.1, "stall_after": 2.0}})
    specs = resolve_timers(Polling(), cfg.orchs[0], 0, cfg)
    assert specs[0] == TimerSpec("poll", 0.5, 0.1, None, 2.0, method="poll")
    assert specs[1].interval == 60.0


@pytest.mark.parametrize(("timers", "field", "message"), [
    ({"pol": {"interval": 1.0}}, "orchs.0.timers.pol", "has no timer 'pol' (its timers: flush, poll)"),
    ({"poll": {"interval": 0.5}}, "orchs.0.timers.poll.interval", "jitter 1 s is longer than the interval 0.5 s"),
])
def test_override_mistakes_name_the_field(timers: dict[str, object], field: str, message: str) -> None:
    cfg = config(timers)
    with pytest.raises(ConfigError) as err:
        resolve_timers(Polling(), cfg.orchs[0], 0, cfg)
    assert err.value.field == field and message in err.value.problem


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), 1e9, "5"])
def test_a_declared_interval_no_timer_can_run_with_is_a_config_error(bad: object) -> None:
    class Bad(Orch):
        @timer(bad)  # type: ignore[arg-type]
        async def poll(self) -> None: ...

    cfg = config()
    with pytest.raises(ConfigError) as err:
        resolve_timers(Bad(), cfg.orchs[0], 0, cfg)
    assert err.value.field == "orchs.0.plugin" and "timer 'poll': interval must be" in err.value.problem


def test_an_override_out_of_range_is_refused_by_pydantic() -> None:
    with pytest.raises(ConfigError) as err:
        config({"poll": {"interval": 0}})
    assert err.value.field == "orchs.0.timers.poll.interval"


def test_swssd_check_validates_the_intervals(tmp_path: Path) -> None:
    (tmp_path / "bad_timer.py").write_text(
        "from swssd import Orch, timer\n\n\nclass BadTimer(Orch):\n"
        "    @timer(-2.0)\n    async def poll(self) -> None:\n        pass\n\n"
        "    async def handle(self, table, task):\n        pass\n"
    )
    conf = tmp_path / "swssd.toml"
    conf.write_text('[[orchs]]\nplugin = "bad_timer:BadTimer"\ntables = [{table = "T"}]\n')
    done = subprocess.run([sys.executable, "-m", "swssd.cli", "check", "--config", str(conf)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert "timer 'poll': interval must be above 0" in done.stderr and "Traceback" not in done.stderr
    conf.write_text('[[orchs]]\nplugin = "bad_timer:BadTimer"\ntables = [{table = "T"}]\n'
                    'timers = {poll = {interval = 0.25}}\n')
    done = subprocess.run([sys.executable, "-m", "swssd.cli", "check", "--config", str(conf)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done
    assert "timer poll every 0.25 s" in done.stdout


class Counting(Orch):
    def __init__(self) -> None:
        super().__init__()
        self.starts: list[float] = []
        self.running = 0
        self.overlapped = False
        self.mode = "ok"

    async def beat(self) -> None:
        loop = asyncio.get_running_loop()
        self.starts.append(loop.time())
        self.overlapped |= self.running > 0
        self.running += 1
        try:
            if self.mode == "raise":
                raise RuntimeError("boom")
            await asyncio.sleep(0.12 if self.mode == "slow" else 10.0 if self.mode == "hang" else 0)
        finally:
            self.running -= 1


async def test_a_timer_keeps_its_ticks_skips_what_it_ran_past_and_counts_failures() -> None:
    orch = Counting()
    run = TimerRun(orch, TimerSpec("beat", 0.1, method="beat"), handler_timeout=1.0, stall_after=5.0)
    run.start()
    await asyncio.sleep(1.05)
    starts = orch.starts
    # fixed ticks: a late call does not push the next ones back (no drift), and each comes near its tick
    assert 8 <= len(starts) <= 11, starts
    assert all(abs((s - starts[0]) - 0.1 * round((s - starts[0]) / 0.1)) < 0.04 for s in starts), starts
    orch.mode = "slow"  # 0.12 s calls, 0.1 s ticks: the ticks run past are skipped
    await asyncio.sleep(0.5)
    assert run.stats.skipped >= 2 and not orch.overlapped
    orch.mode = "raise"
    await asyncio.sleep(0.45)
    assert run.stats.failed >= 2 and run.alive
    run.halt()
    await asyncio.sleep(0.01)
    assert not run.alive


async def test_a_call_past_handler_timeout_is_cancelled_and_counted() -> None:
    orch = Counting()
    orch.mode = "hang"
    timers = Timers()
    timers.add(orch, [TimerSpec("beat", 0.05, first_delay=0.0, method="beat")], handler_timeout=0.1, stall_after=5.0)
    timers.start()
    await asyncio.sleep(0.33)
    run = timers.runs[0]
    assert run.stats.timed_out >= 2 and run.stats.failed == 0 and not orch.overlapped
    loop = asyncio.get_running_loop()
    await timers.stop(loop.time() + 1.0, asyncio.Event())
    assert not run.alive
