"""swssd: SONiC's Redis table channels for asyncio Python, wire-exact with sonic-swss-common."""

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
