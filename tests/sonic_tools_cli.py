"""sonic_tools_suite.py's scenarios for sonic-utilities' operator commands: `config` and `show` as an
operator types them, one process per command, on a switch with a few ports, and route_check."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from sonic_tools_steps import Env, Result, Scenario, redis_cli, run_step

#: `config ...` then `show ...` commands, in order: each `show` reads what the `config`s before it wrote
CLI_STEPS = [
    ["show", "vlan", "brief"],
    ["config", "vlan", "add", "100"],
    ["config", "vlan", "add", "100"],                      # exists: refused
    ["config", "vlan", "add", "200"],
    ["config", "vlan", "member", "add", "100", "Ethernet0"],
    ["config", "vlan", "member", "add", "-u", "200", "Ethernet8"],
    ["config", "vlan", "member", "add", "100", "Ethernet404"],  # no such port: refused
    ["config", "interface", "ip", "add", "Ethernet4", "10.0.0.1/31"],
    ["config", "interface", "ip", "add", "Ethernet4", "fc00::1/126"],
    ["config", "interface", "ip", "add", "Vlan100", "192.168.0.1/24"],
    ["config", "loopback", "add", "Loopback0"],
    ["config", "interface", "ip", "add", "Loopback0", "10.1.0.1/32"],
    ["config", "portchannel", "add", "PortChannel01"],
    ["config", "portchannel", "member", "add", "PortChannel01", "Ethernet12"],
    ["config", "interface", "shutdown", "Ethernet12"],
    ["config", "interface", "mtu", "Ethernet4", "1500"],
    ["config", "feature", "state", "snmp", "disabled"],
    ["config", "feature", "autorestart", "lldp", "disabled"],
    ["config", "feature", "state", "nosuch", "enabled"],     # no such feature: refused
    ["show", "vlan", "brief"],
    ["show", "vlan", "config"],
    ["show", "interfaces", "status"],
    ["show", "interfaces", "description"],
    ["show", "interfaces", "portchannel"],
    ["show", "feature", "status"],
    ["show", "feature", "config"],
    ["show", "feature", "autorestart"],
    ["config", "vlan", "member", "del", "100", "Ethernet0"],
    ["config", "interface", "ip", "remove", "Ethernet4", "10.0.0.1/31"],
    ["config", "interface", "ip", "remove", "Vlan100", "192.168.0.1/24"],
    ["config", "vlan", "del", "100"],
    ["config", "loopback", "del", "Loopback0"],
    ["config", "portchannel", "member", "del", "PortChannel01", "Ethernet12"],
    ["show", "vlan", "brief"],
    ["show", "runningconfiguration", "all"],
    ["show", "interfaces", "counters"],
    ["show", "interfaces", "counters", "-a"],
    ["show", "ip", "interfaces"],
    ["config", "save", "-y"],
    ["config", "load", "-y", "/etc/sonic/extra_config.json"],
    ["show", "vlan", "brief"],
    ["show", "acl", "table"],
    ["crm", "config", "polling", "interval", "30"],
    ["crm", "config", "thresholds", "ipv4", "route", "type", "used"],
    ["crm", "show", "summary"],
    ["crm", "show", "thresholds", "ipv4", "route"],
    ["crm", "show", "resources", "ipv4", "route"],
    ["pfcwd", "start", "--action", "drop", "all", "400", "--restoration-time", "400"],
    ["pfcwd", "show", "config"],
    ["pfcwd", "stop"],
    ["dump", "state", "port", "Ethernet0"],
    ["dump", "state", "vlan", "Vlan200", "--db", "CONFIG_DB"],
]
#: what `config load` merges in through sonic-cfggen --write-to-db (ConfigDBConnector.mod_config):
#: a new VLAN, a changed port, an empty row, a list field, a row deleted by null
EXTRA_CONFIG = {
    "VLAN": {"Vlan300": {"vlanid": "300"}},
    "PORT": {"Ethernet8": {"mtu": "4000", "description": "loaded"}},
    "SYSLOG_SERVER": {"10.0.0.9": {}},
    "ACL_TABLE": {"DATAACL": {"type": "L3", "stage": "ingress", "policy_desc": "DATAACL",
                              "ports": ["Ethernet0", "Ethernet4"]}},
    "FEATURE": {"lldp": None},
}
#: console scripts `show` runs as commands: name -> (module, function)
CONSOLE_SCRIPTS = {"acl-loader": ("acl_loader.main", "cli")}
#: how each command's click group is started, as its console script does
ENTRY = {"config": "from config.main import config as main", "show": "from show.main import cli as main",
         "crm": "from crm.main import cli as main", "pfcwd": "from pfcwd.main import cli as main",
         "dump": "from dump.main import dump as main"}


def _port(index: int) -> dict[str, str]:
    lanes = ",".join(str(29 - 4 * index + i) for i in range(4))
    return {"lanes": lanes, "alias": f"fortyGigE0/{4 * index}", "speed": "40000", "mtu": "9100",
            "admin_status": "up", "index": str(index)}


def _counters(index: int) -> dict[str, str]:
    names = ("IF_IN_UCAST_PKTS", "IF_IN_NON_UCAST_PKTS", "IF_IN_ERRORS", "IF_IN_DISCARDS",
             "ETHER_RX_OVERSIZE_PKTS", "IF_OUT_UCAST_PKTS", "IF_OUT_NON_UCAST_PKTS", "IF_OUT_ERRORS",
             "IF_OUT_DISCARDS", "ETHER_TX_OVERSIZE_PKTS", "IF_IN_OCTETS", "IF_OUT_OCTETS")
    return {f"SAI_PORT_STAT_{name}": str((index + 1) * 1000003 * (n + 1)) for n, name in enumerate(names)}


#: four ports (the base config has the first two), PFC on two, the features an image's init_cfg.json lists
CLI_SEED = {
    "PORT|Ethernet8": _port(2), "PORT|Ethernet12": _port(3),
    "PORT_QOS_MAP|Ethernet0": {"pfc_enable": "3,4"}, "PORT_QOS_MAP|Ethernet4": {"pfc_enable": "3,4"},
    "FEATURE|snmp": {"state": "enabled", "auto_restart": "enabled", "delayed": "False", "has_global_scope": "True",
                     "has_per_asic_scope": "False", "high_mem_alert": "disabled", "set_owner": "local"},
    "FEATURE|lldp": {"state": "enabled", "auto_restart": "enabled", "delayed": "False", "has_global_scope": "True",
                     "has_per_asic_scope": "False", "high_mem_alert": "disabled", "set_owner": "local"},
}
#: what portsyncd and portmgrd put in APPL_DB and STATE_DB for those ports on a running switch
CLI_SEED_DBS = {
    0: {f"PORT_TABLE:Ethernet{4 * i}": {**_port(i), "oper_status": "up" if i % 2 == 0 else "down",
                                        "description": ""} for i in range(4)},
    6: {f"PORT_TABLE|Ethernet{4 * i}": {"state": "ok", "netdev_oper_status": "up"} for i in range(4)},
    # what flex counters and the rates plugin put in COUNTERS_DB (portstat reads them)
    2: {"COUNTERS_PORT_NAME_MAP": {f"Ethernet{4 * i}": f"oid:0x100000000000{i + 2}" for i in range(4)},
        **{f"COUNTERS:oid:0x100000000000{i + 2}": _counters(i) for i in range(4)},
        **{f"RATES:oid:0x100000000000{i + 2}": {"RX_BPS": f"{1000.5 * i}", "RX_PPS": f"{10 * i}",
                                                  "TX_BPS": f"{2000.25 * i}", "TX_PPS": f"{20 * i}"}
           for i in range(4)}},
}


def cli_paths(env: Env) -> list[Path]:
    """What sonic-utilities' commands import: the trees an image installs them with."""
    return [env.trees["utilities"], env.trees["py-common"], env.trees["config-engine"], env.trees["yang-mgmt"],
            env.trees["platform-common"], env.placeholders()]


def scenario_config_show(env: Env, result: Result) -> None:
    """config's utilities_common.auto_techsupport_helper puts /usr/sbin before PATH's stubs, so
    `ip neigh flush dev Ethernet4` runs for real: on tap links in the suite's network namespace."""
    for link in ("Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12", "Vlan100"):
        subprocess.run(["ip", "tuntap", "add", link, "mode", "tap"], capture_output=True)  # already there: fine
    Path("/etc/sonic/extra_config.json").write_text(json.dumps(EXTRA_CONFIG))  # in the run's overlay
    for name, (module, function) in CONSOLE_SCRIPTS.items():  # as pip installs sonic-utilities' entry points
        script = env.scratch / "stubs" / name
        script.write_text(f"#!/usr/bin/env python3\nimport sys\nfrom {module} import {function}\n"
                          f"sys.argv[0] = {name!r}\nsys.exit({function}())\n")
        script.chmod(0o755)
    paths = cli_paths(env)
    bins = [env.trees["utilities"] / "scripts"]  # show runs intfutil, portconfig... as commands
    for command, *args in CLI_STEPS:
        code = f"import sys; {ENTRY[command]}; sys.argv[0] = {command!r}; main()"
        run_step(env, result, ["-c", code, *args], paths, bins=bins, label=[command, *args])


def _asic_route(prefix: str) -> str:
    return (f'ASIC_STATE:SAI_OBJECT_TYPE_ROUTE_ENTRY:{{"dest":"{prefix}","switch_id":"oid:0x21000000000000",'
            f'"vr":"oid:0x3000000000022"}}')


#: APPL_DB routes and interfaces, ASIC_DB route entries: in sync but for one route ASIC_DB lacks
#: (10.30/24) and one it has that APPL_DB does not (10.40/24)
ROUTE_SEED_DBS = {
    0: {"ROUTE_TABLE:10.10.0.0/24": {"nexthop": "10.0.0.1", "ifname": "Ethernet0", "protocol": "bgp"},
        "ROUTE_TABLE:10.30.0.0/24": {"nexthop": "10.0.0.1", "ifname": "Ethernet0", "protocol": "bgp"},
        "ROUTE_TABLE:fc00:1::/64": {"nexthop": "fc00::1", "ifname": "Ethernet0"},
        "INTF_TABLE:Ethernet0": {"NULL": "NULL"},
        "INTF_TABLE:Ethernet0:10.0.0.0/31": {"scope": "global", "family": "IPv4"}},
    1: {_asic_route(prefix): {"SAI_ROUTE_ENTRY_ATTR_NEXT_HOP_ID": "oid:0x40000000000a1"}
        for prefix in ("10.10.0.0/24", "fc00:1::/64", "10.0.0.0/32", "10.40.0.0/24")},
}


def scenario_route_check(env: Env, result: Result) -> None:
    """route_check out of sync (it waits a second for ASIC_DB updates on its SubscriberStateTable,
    then reports), then after the missing route's ASIC entry appears and the extra one goes."""
    paths = [env.trees["utilities"], env.trees["py-common"], env.placeholders()]
    script = str(env.trees["utilities"] / "scripts" / "route_check.py")
    run_step(env, result, [script, "-m", "DEBUG"], paths)
    redis_cli("-n", "1", "HSET", _asic_route("10.30.0.0/24"), "SAI_ROUTE_ENTRY_ATTR_NEXT_HOP_ID", "oid:0x40000000000a1")
    redis_cli("-n", "1", "DEL", _asic_route("10.40.0.0/24"))
    run_step(env, result, [script, "-m", "DEBUG"], paths)
    redis_cli("-n", "4", "HSET", "FEATURE|bgp", "state", "disabled")
    run_step(env, result, [script], paths)


SCENARIOS = [
    Scenario("config_show", ("utilities", "py-common", "config-engine", "yang-mgmt", "platform-common"),
             scenario_config_show, seed=CLI_SEED, seed_dbs=CLI_SEED_DBS),
    Scenario("route_check", ("utilities", "py-common"), scenario_route_check,
             seed={"FEATURE|bgp": {"state": "enabled"}}, seed_dbs=ROUTE_SEED_DBS,
             ordered_reactions=False),  # it asks FRR for IPv4 and IPv6 routes from two threads
]
