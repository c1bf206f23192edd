"""swssd: SONiC's Redis table channels for asyncio Python, wire-exact with sonic-swss-common."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .configdb import ConfigDBConnector
    from .configdb_listener import ConfigEvent, ConfigEvents
    from .connector import DBConnector
    from .consumer_base import ConsumerTableBase
    from .consumer_state_table import ConsumerStateTable
    from .consumer_table import ConsumerTable
    from .dbconfig import SonicDBConfig, SonicDBGlobalConfig
    from .errors import (
        ConfigError,
        InvalidSeparatorError,
        RedisAuthError,
        RedisUnreachableError,
        RedisUrlError,
        SwssdError,
        TempViewError,
        UnknownDatabaseError,
        UnknownNamespaceError,
    )
    from .fields import DEL_COMMAND, SET_COMMAND, FieldValues, KeyOpFieldsValues
    from .notification_consumer import Notification, NotificationConsumer
    from .notification_producer import NotificationProducer
    from .orch import Orch, Retry
    from .producer_state_table import ProducerStateTable
    from .producer_table import ProducerTable
    from .runner import run
    from .selectable import Selectable, Subscription
    from .selector import Select
    from .subscriber_state_table import SubscriberStateTable
    from .table import Table
    from .zmq import ZmqClient, ZmqConsumerStateTable, ZmqProducerStateTable, ZmqServer

# The public names are imported on first use (PEP 562): a program that uses one table kind, a
# tool, or the replay (which needs none of them) does not import the whole library, redis-py and
# pydantic at start (`import swssd` took 0.2-0.36 s). Each module and the names it gives:
_MODULES = {
    ".configdb": ("ConfigDBConnector",),
    ".configdb_listener": ("ConfigEvent", "ConfigEvents"),
    ".connector": ("DBConnector",),
    ".consumer_base": ("ConsumerTableBase",),
    ".consumer_state_table": ("ConsumerStateTable",),
    ".consumer_table": ("ConsumerTable",),
    ".dbconfig": ("SonicDBConfig", "SonicDBGlobalConfig"),
    ".errors": (
        "ConfigError", "InvalidSeparatorError", "RedisAuthError", "RedisUnreachableError", "RedisUrlError",
        "SwssdError", "TempViewError", "UnknownDatabaseError", "UnknownNamespaceError",
    ),
    ".fields": ("DEL_COMMAND", "SET_COMMAND", "FieldValues", "KeyOpFieldsValues"),
    ".notification_consumer": ("Notification", "NotificationConsumer"),
    ".notification_producer": ("NotificationProducer",),
    ".orch": ("Orch", "Retry"),
    ".producer_state_table": ("ProducerStateTable",),
    ".producer_table": ("ProducerTable",),
    ".runner": ("run",),
    ".selectable": ("Selectable", "Subscription"),
    ".selector": ("Select",),
    ".subscriber_state_table": ("SubscriberStateTable",),
    ".table": ("Table",),
    ".zmq": ("ZmqClient", "ZmqConsumerStateTable", "ZmqProducerStateTable", "ZmqServer"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}

__version__ = "0.1.0"

__all__ = [
    "DEL_COMMAND",
    "SET_COMMAND",
    "ConfigDBConnector",
    "ConfigError",
    "ConfigEvent",
    "ConfigEvents",
    "ConsumerStateTable",
    "ConsumerTable",
    "ConsumerTableBase",
    "DBConnector",
    "FieldValues",
    "InvalidSeparatorError",
    "KeyOpFieldsValues",
    "Notification",
    "NotificationConsumer",
    "NotificationProducer",
    "Orch",
    "ProducerStateTable",
    "ProducerTable",
    "RedisAuthError",
    "RedisUnreachableError",
    "RedisUrlError",
    "Retry",
    "Select",
    "Selectable",
    "SonicDBConfig",
    "SonicDBGlobalConfig",
    "SubscriberStateTable",
    "Subscription",
    "SwssdError",
    "Table",
    "TempViewError",
    "UnknownDatabaseError",
    "UnknownNamespaceError",
    "ZmqClient",
    "ZmqConsumerStateTable",
    "ZmqProducerStateTable",
    "ZmqServer",
    "run",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
