"""The operator tools behind `swssd check`, `produce`, `dump`, `db`, `watch` and `status`.

Layer rule: imports every layer below the command line (redis, channels, ops, capture, orch).
"""
