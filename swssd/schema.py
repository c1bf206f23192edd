"""SONiC's schema in one place, as the C++ library's common/schema.h holds it: the databases with
their ids and key separators, the names a table channel keeps in Redis, and the line that starts
a swss.rec recording.

database_config.json is what places a database on a server; this map is what swssd uses when
Redis is given as one URL (every database on one server, SONiC's usual ids) and to name a
database's separator where no database_config.json is at hand.
"""

from __future__ import annotations

#: Database name: (id, key separator), as SONiC's database_config.json has them.
DATABASES: dict[str, tuple[int, str]] = {
    "APPL_DB": (0, ":"),
    "ASIC_DB": (1, ":"),
    "COUNTERS_DB": (2, ":"),
    "LOGLEVEL_DB": (3, ":"),
    "CONFIG_DB": (4, "|"),
    "PFC_WD_DB": (5, ":"),
    "FLEX_COUNTER_DB": (5, ":"),
    "STATE_DB": (6, "|"),
    "SNMP_OVERLAY_DB": (7, "|"),
    "RESTAPI_DB": (8, "|"),
    "GB_ASIC_DB": (9, ":"),
    "GB_COUNTERS_DB": (10, ":"),
    "GB_FLEX_COUNTER_DB": (11, ":"),
    "CHASSIS_APP_DB": (12, "|"),
    "CHASSIS_STATE_DB": (13, "|"),
    "APPL_STATE_DB": (14, ":"),
}


def separator_of(db_name: str) -> str:
    """The key separator of a SONiC database (':' for a name SONiC does not have)."""
    return DATABASES.get(db_name, (0, ":"))[1]


#: `<TABLE>_CHANNEL@<db id>`: the pub/sub channel a state table's or queue's producer PUBLISHes on
CHANNEL_SUFFIX = "_CHANNEL"
#: `<TABLE>_KEY_SET`: keys with changes a ConsumerStateTable has not popped yet
KEY_SET_SUFFIX = "_KEY_SET"
#: `<TABLE>_DEL_SET`: keys deleted since the last pop
DEL_SET_SUFFIX = "_DEL_SET"
#: `<TABLE>_KEY_VALUE_OP_QUEUE`: a ProducerTable's operation queue
OP_QUEUE_SUFFIX = "_KEY_VALUE_OP_QUEUE"
#: Keys of a table's channel that are not entries of any table.
BOOKKEEPING_SUFFIXES = (KEY_SET_SUFFIX, DEL_SET_SUFFIX, OP_QUEUE_SUFFIX)
#: `_<TABLE><sep><key>`: the state hash holding a key's changes until they are popped
STATE_PREFIX = "_"

#: The text of the line a swss.rec recording starts with (after its timestamp and `|`).
REC_STARTED = "recording started"
