"""`python -m swssd.replay ...`, also the file to give spark-submit (absolute imports on purpose)."""

from swssd.replay.cli import run

run()
