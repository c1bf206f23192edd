"""The operator tools behind `swssd check`, `produce`, `dump`, `db`, `watch` and `status`."""
