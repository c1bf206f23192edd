"""Offline replay of swssd captures and SONiC swss.rec files with PySpark (the optional `replay` extra).

`swssd.replay.cli.main(argv)` is the command line (`swssd replay ...`, `python -m swssd.replay`);
the DataFrame building blocks live in `inputs` (parsing), `fold` (state at an instant), `stats`,
`diff` and `restore`. Importing this package does not import PySpark.

Layer rule: imports the base modules, `swssd.redis`, `swssd.channels` and `swssd.capture`
(offline: never the daemon).
"""
