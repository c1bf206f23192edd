"""The ZMQ state-table channel of sonic-swss-common: ZmqClient/ZmqServer sockets, the
BinarySerializer message format, ZmqProducerStateTable and ZmqConsumerStateTable, and the
AsyncDBUpdater that persists changes to Redis."""

from .consumer import ZmqConsumerStateTable
from .db_updater import AsyncDBUpdater
from .producer import ZmqProducerStateTable
from .serializer import (
    MAX_MESSAGE_SIZE,
    MalformedMessageError,
    MessageTooLargeError,
    ZmqMessageError,
    deserialize,
    serialize,
)
from .sockets import ORCH_ZMQ_PORT, ZmqClient, ZmqSendError, ZmqServer

__all__ = [
    "MAX_MESSAGE_SIZE",
    "ORCH_ZMQ_PORT",
    "AsyncDBUpdater",
    "MalformedMessageError",
    "MessageTooLargeError",
    "ZmqClient",
    "ZmqConsumerStateTable",
    "ZmqMessageError",
    "ZmqProducerStateTable",
    "ZmqSendError",
    "ZmqServer",
    "deserialize",
    "serialize",
]
