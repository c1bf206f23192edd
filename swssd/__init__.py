"""swssd: SONiC's Redis table channels for asyncio Python, wire-exact with sonic-swss-common."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .channels.configdb import ConfigDBConnector
    from .channels.configdb_listener import ConfigEvent, ConfigEvents
    from .channels.consumer_base import ConsumerTableBase
    from .channels.consumer_state_table import ConsumerStateTable
    from .channels.consumer_table import ConsumerTable
    from .channels.notification_consumer import Notification, NotificationConsumer
    from .channels.notification_producer import NotificationProducer
    from .channels.producer_state_table import ProducerStateTable
    from .channels.producer_table import ProducerTable
    from .channels.selectable import Selectable, Subscription
    from .channels.selector import Select
    from .channels.subscriber_state_table import SubscriberStateTable
    from .channels.table import Table
    from .channels.zmq import ZmqClient, ZmqConsumerStateTable, ZmqProducerStateTable, ZmqServer
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
    from .orch import Orch, Retry, timer
    from .redis.connector import DBConnector
    from .redis.dbconfig import SonicDBConfig, SonicDBGlobalConfig
    from .runner import run

# The public names are imported on first use (PEP 562): a program that uses one table kind, a
# tool, or the replay (which needs none of them) does not import the whole library, redis-py and
# pydantic at start (`import swssd` took 0.2-0.36 s). Each module and the names it gives:
_MODULES = {
    ".channels.configdb": ("ConfigDBConnector",),
    ".channels.configdb_listener": ("ConfigEvent", "ConfigEvents"),
    ".redis.connector": ("DBConnector",),
    ".channels.consumer_base": ("ConsumerTableBase",),
    ".channels.consumer_state_table": ("ConsumerStateTable",),
    ".channels.consumer_table": ("ConsumerTable",),
    ".redis.dbconfig": ("SonicDBConfig", "SonicDBGlobalConfig"),
    ".errors": (
        "ConfigError", "InvalidSeparatorError", "RedisAuthError", "RedisUnreachableError", "RedisUrlError",
        "SwssdError", "TempViewError", "UnknownDatabaseError", "UnknownNamespaceError",
    ),
    ".fields": ("DEL_COMMAND", "SET_COMMAND", "FieldValues", "KeyOpFieldsValues"),
    ".channels.notification_consumer": ("Notification", "NotificationConsumer"),
    ".channels.notification_producer": ("NotificationProducer",),
    ".orch": ("Orch", "Retry", "timer"),
    ".channels.producer_state_table": ("ProducerStateTable",),
    ".channels.producer_table": ("ProducerTable",),
    ".runner": ("run",),
    ".channels.selectable": ("Selectable", "Subscription"),
    ".channels.selector": ("Select",),
    ".channels.subscriber_state_table": ("SubscriberStateTable",),
    ".channels.table": ("Table",),
    ".channels.zmq": ("ZmqClient", "ZmqConsumerStateTable", "ZmqProducerStateTable", "ZmqServer"),
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
    "timer",
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
