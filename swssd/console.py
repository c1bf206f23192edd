"""The `swssd` console script.

`swssd replay ...` goes straight to the replay's own entry: the daemon's command line
(swssd.cli) imports redis-py, pydantic, uvloop and the tools, 0.3 s that a replay, which needs
none of them, would wait for before its JVM could start. The replay also exits as
`python -m swssd.replay` does, without Python's finalization. Everything else is swssd.cli.main.
"""

from __future__ import annotations

import sys


def main() -> int:
    argv = sys.argv[1:]
    if argv[:1] == ["replay"]:
        from .replay.cli import run

        run(argv[1:])  # never returns
    from .cli import main as cli_main

    return cli_main()
