"""Operator tools behind `swssd produce` and `swssd dump`."""
