"""The randomized fault campaign (issue 34): seeded schedules of daemon, Redis, connection and
handler faults against `swssd run` consuming a table of every kind, and the blocking layer's
clients, checked against a model of each channel's promises.

    PYTHONPATH=tests .venv/bin/python -m campaign --seed 7          # one seed (a failure's replay)
    PYTHONPATH=tests .venv/bin/python -m campaign --seeds 0-19      # several

tests/test_campaign.py runs a short campaign in CI; bench/bench_campaign.py a long one.
"""

from .runner import Result, run_schedule
from .schedule import FAULT_KINDS, Fault, HandlerFaults, Schedule, generate

__all__ = ["FAULT_KINDS", "Fault", "HandlerFaults", "Result", "Schedule", "generate", "run_schedule"]
