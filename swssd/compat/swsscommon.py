"""The names of sonic-swss-common's `swsscommon.swsscommon`, gathered from the layer's modules.

    from swssd.compat import swsscommon
    db = swsscommon.DBConnector("APPL_DB", 0)
"""

from __future__ import annotations

from ..fields import DEL_COMMAND as DEL_COMMAND
from ..fields import SET_COMMAND as SET_COMMAND
from .cfg_schema import *  # noqa: F403 - a SONiC image's binding has cfg_schema.h's CFG_* names (from YANG)
from .configdb import ConfigDBConnector as ConfigDBConnector
from .configdb import ConfigDBPipeConnector as ConfigDBPipeConnector
from .consumer_state_table import ConsumerStateTable as ConsumerStateTable
from .consumer_table import ConsumerTable as ConsumerTable
from .consumer_table_base import ConsumerTableBase as ConsumerTableBase
from .consumer_table_base import TableConsumable as TableConsumable
from .containers import FieldValueMap as FieldValueMap
from .containers import FieldValuePairs as FieldValuePairs
from .containers import GetInstanceListResult as GetInstanceListResult
from .containers import VectorString as VectorString
from .counter_table import Counter as Counter
from .counter_table import CounterTable as CounterTable
from .counter_table import MacsecCounter as MacsecCounter
from .counter_table import PortCounter as PortCounter
from .dbconfig import RedisInstInfo as RedisInstInfo
from .dbconfig import SonicDBConfig as SonicDBConfig
from .dbconfig import SonicDBKey as SonicDBKey
from .dbconnector import DBConnector as DBConnector
from .dbinterface import DBInterface as DBInterface
from .dbinterface import UnavailableDataError as UnavailableDataError
from .events import event_publish as event_publish
from .events import events_deinit_publisher as events_deinit_publisher
from .events import events_init_publisher as events_init_publisher
from .interface import IFACE_NAME_MAX_LEN as IFACE_NAME_MAX_LEN
from .interface import isInterfaceNameValid as isInterfaceNameValid
from .logger import Logger as Logger
from .notification_consumer import NotificationConsumer as NotificationConsumer
from .notification_producer import NotificationProducer as NotificationProducer
from .producer_state_table import ProducerStateTable as ProducerStateTable
from .producer_table import ProducerTable as ProducerTable
from .pubsub import PubSub as PubSub
from .redis_command import RedisCommand as RedisCommand
from .redis_command import RedisReply as RedisReply
from .redis_pipeline import RedisPipeline as RedisPipeline
from .redis_transactioner import RedisTransactioner as RedisTransactioner
from .restart_waiter import RestartWaiter as RestartWaiter
from .schema import *  # noqa: F403 - the binding exposes every constant of schema.h at module level
from .selectable import CastSelectableToRedisSelectObj as CastSelectableToRedisSelectObj
from .selectable import RedisSelect as RedisSelect
from .selectable import Selectable as Selectable
from .selector import Select as Select
from .sonicv2connector import SonicV2Connector as SonicV2Connector
from .subscriber_state_table import CastSelectableToSubscriberTableObj as CastSelectableToSubscriberTableObj
from .subscriber_state_table import SubscriberStateTable as SubscriberStateTable
from .table import Table as Table
from .table import TableBase as TableBase
from .table import transpose_pops as transpose_pops
from .warm_restart import WarmStart as WarmStart
