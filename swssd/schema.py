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

#: The APPL_DB tables of sonic-swss-common's schema.h (its APP_*_NAME constants, which
#: swssd/compat/schema.py holds as generated; tests/test_sonic_tables.py keeps the two equal).
APPL_DB_TABLES: frozenset[str] = frozenset({
    "ACL_RULE_TABLE", "ACL_TABLE_DEFINITION_TABLE", "ACL_TABLE_TABLE", "ACL_TABLE_TYPE_TABLE", "BFD_SESSION_TABLE",
    "BGP_PROFILE_TABLE", "BUFFER_PG_TABLE", "BUFFER_POOL_TABLE", "BUFFER_PORT_EGRESS_PROFILE_LIST_TABLE",
    "BUFFER_PORT_INGRESS_PROFILE_LIST_TABLE", "BUFFER_PROFILE_TABLE", "BUFFER_QUEUE_TABLE",
    "CLASS_BASED_NEXT_HOP_GROUP_TABLE", "COPP_TABLE", "DASH_ACL_GROUP_TABLE", "DASH_ACL_IN_TABLE",
    "DASH_ACL_OUT_TABLE", "DASH_ACL_RULE_TABLE", "DASH_APPLIANCE_TABLE", "DASH_ENI_FORWARD_TABLE",
    "DASH_ENI_PLACEMENT_TABLE", "DASH_ENI_ROUTE_TABLE", "DASH_ENI_TABLE", "DASH_FLOW_DUMP_FILTER_TABLE",
    "DASH_FLOW_SYNC_SESSION_TABLE", "DASH_HA_SCOPE_CONFIG_TABLE", "DASH_HA_SCOPE_TABLE", "DASH_HA_SET_CONFIG_TABLE",
    "DASH_HA_SET_TABLE", "DASH_METER_POLICY_TABLE", "DASH_METER_RULE_TABLE", "DASH_OUTBOUND_PORT_MAP_RANGE_TABLE",
    "DASH_OUTBOUND_PORT_MAP_TABLE", "DASH_PA_VALIDATION_TABLE", "DASH_PREFIX_TAG_TABLE", "DASH_QOS_TABLE",
    "DASH_ROUTE_GROUP_TABLE", "DASH_ROUTE_RULE_TABLE", "DASH_ROUTE_TABLE", "DASH_ROUTING_APPLIANCE_TABLE",
    "DASH_ROUTING_TYPE_TABLE", "DASH_TUNNEL_TABLE", "DASH_VNET_MAPPING_TABLE", "DASH_VNET_TABLE",
    "DSCP_TO_TC_MAP_TABLE", "EVPN_SPLIT_HORIZON_TABLE", "FABRIC_MONITOR_TABLE", "FABRIC_PORT_TABLE",
    "FC_TO_NHG_INDEX_MAP_TABLE", "FDB_TABLE", "FIXED_DISABLE_VLAN_CHECKS_TABLE", "FIXED_IPV4_MULTICAST_TABLE",
    "FIXED_IPV4_TABLE", "FIXED_IPV6_MULTICAST_TABLE", "FIXED_IPV6_TABLE", "FIXED_IPV6_TUNNEL_TERMINATION_TABLE",
    "FIXED_L3_ADMIT_TABLE", "FIXED_MIRROR_SESSION_TABLE", "FIXED_MULTICAST_ROUTER_INTERFACE_TABLE",
    "FIXED_NEIGHBOR_TABLE", "FIXED_NEXTHOP_TABLE", "FIXED_ROUTER_INTERFACE_TABLE", "FIXED_TUNNEL_TABLE",
    "FIXED_WCMP_GROUP_TABLE", "FORWARDING_STATE_COMMAND", "FORWARDING_STATE_RESPONSE", "GEARBOX_TABLE",
    "HW_FORWARDING_STATE_PEER", "HW_MUX_CABLE_TABLE", "ICMP_ECHO_SESSION_TABLE", "INTF_TABLE",
    "ISOLATION_GROUP_TABLE", "L2_NEXTHOP_GROUP_TABLE", "LABEL_ROUTE_TABLE", "LAG_MEMBER_TABLE", "LAG_TABLE",
    "LLR_PORT_TABLE", "LLR_PROFILE_TABLE", "MACSEC_EGRESS_SA_TABLE", "MACSEC_EGRESS_SC_TABLE",
    "MACSEC_INGRESS_SA_TABLE", "MACSEC_INGRESS_SC_TABLE", "MACSEC_PORT_TABLE", "MAP_PFC_PRIORITY_TO_QUEUE",
    "MCLAG_FDB_TABLE", "MUX_CABLE_COMMAND_TABLE", "MUX_CABLE_RESPONSE_TABLE", "MUX_CABLE_TABLE",
    "NAPT_POOL_IP_TABLE", "NAPT_TABLE", "NAPT_TWICE_TABLE", "NAT_DNAT_POOL_TABLE", "NAT_GLOBAL_TABLE", "NAT_TABLE",
    "NAT_TWICE_TABLE", "NEIGH_RESOLVE_TABLE", "NEIGH_TABLE", "NEXTHOP_GROUP_TABLE", "P4RT_TABLE", "PAC_PORT_TABLE",
    "PASS_THROUGH_ROUTE_TABLE", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP_TABLE", "PFC_WD_TABLE", "PIC_CONTEXT_TABLE",
    "PORT_QOS_MAP_TABLE", "PORT_TABLE", "PORT_TABLE_PEER", "QUEUE_TABLE", "REPLICATION_IP_MULTICAST_TABLE",
    "REPLICATION_L2_MULTICAST_TABLE", "ROUTE_TABLE", "SAG_TABLE", "SCHEDULER_TABLE", "SEND_TO_INGRESS_PORT_TABLE",
    "SFLOW_SAMPLE_RATE_TABLE", "SFLOW_SESSION_TABLE", "SFLOW_TABLE", "SRV6_MY_SID_TABLE", "SRV6_SID_LIST_TABLE",
    "STP_BPDU_GUARD_TABLE", "STP_FASTAGEING_FLUSH_TABLE", "STP_INST_PORT_FLUSH_TABLE", "STP_MST_INST_TABLE",
    "STP_MST_PORT_TABLE", "STP_PORT_STATE_TABLE", "STP_PORT_TABLE", "STP_VLAN_INSTANCE_TABLE", "STP_VLAN_PORT_TABLE",
    "STP_VLAN_TABLE", "SUPPRESS_VLAN_NEIGH_TABLE", "SWITCH_TABLE", "SYSTEM_PORT_TABLE", "TABLES_DEFINITION_TABLE",
    "TC_TO_PRIORITY_GROUP_MAP_TABLE", "TC_TO_QUEUE_MAP_TABLE", "TUNNEL_DECAP_TABLE", "TUNNEL_DECAP_TERM_TABLE",
    "TUNNEL_ROUTE_TABLE", "VLAN_MEMBER_TABLE", "VLAN_STACKING_TABLE", "VLAN_TABLE", "VLAN_TRANSLATION_TABLE",
    "VNET_MONITOR_TABLE", "VNET_ROUTE_TABLE", "VNET_ROUTE_TUNNEL_TABLE", "VNET_TABLE", "VRF_TABLE", "VRRP_TABLE",
    "VXLAN_EVPN_NVO_TABLE", "VXLAN_FDB_TABLE", "VXLAN_REMOTE_VNI_TABLE", "VXLAN_TUNNEL_MAP_TABLE",
    "VXLAN_TUNNEL_TABLE", "VXLAN_VRF_TABLE", "WRED_PROFILE_TABLE",
})

#: The daemon of a SONiC switch that consumes (pops) an APPL_DB table, for the tables of
#: APPL_DB_TABLES that are not orchagent's. Popping one of them from
#: another process takes its changes away from that daemon.
APPL_DB_CONSUMERS_BESIDES_ORCHAGENT: dict[str, str] = {
    "NEIGH_RESOLVE_TABLE": "nbrmgrd",
    "MUX_CABLE_COMMAND_TABLE": "ycabled",
    "HW_MUX_CABLE_TABLE": "ycabled",
    "FORWARDING_STATE_COMMAND": "ycabled",
    "MUX_CABLE_RESPONSE_TABLE": "linkmgrd",
    "FORWARDING_STATE_RESPONSE": "linkmgrd",
    "PORT_TABLE_PEER": "linkmgrd",
    "HW_FORWARDING_STATE_PEER": "linkmgrd",
}


def sonic_consumer(db_name: str, table: str) -> str | None:
    """The SONiC daemon that pops `table` of `db_name` on a switch (`orchagent` for most of
    APPL_DB), or None when none of SONiC's own daemons does."""
    if db_name != "APPL_DB" or table not in APPL_DB_TABLES:
        return None
    return APPL_DB_CONSUMERS_BESIDES_ORCHAGENT.get(table, "orchagent")
