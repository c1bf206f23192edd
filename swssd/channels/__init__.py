"""The channel kinds: Table, the state and queue tables, subscriber tables, notifications, Select,
ConfigDBConnector and the ZMQ channel (`zmq/`), wire-exact with sonic-swss-common.

Layer rule: imports only the base modules and `swssd.redis`.
"""
