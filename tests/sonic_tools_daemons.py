"""sonic_tools_suite.py's scenarios for sonic-host-services' daemons beside hostcfgd: featured,
caclmgrd and procdockerstatsd, each started on a seeded switch and fed CONFIG_DB (or APPL_DB)
changes; what they run (stubs' log), write to Redis and to files is their reaction."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from sonic_tools_steps import Env, Result, Scenario, run_daemon


def host_services_paths(env: Env) -> list[Path]:
    return [env.trees["host-services"] / "scripts", env.trees["host-services"], env.trees["py-common"],
            env.trees["utilities"], env.placeholders()]


def _feature(state: str, **more: str) -> dict[str, str]:
    return {"state": state, "auto_restart": "enabled", "delayed": "False", "has_global_scope": "True",
            "has_per_asic_scope": "False", "high_mem_alert": "disabled", "set_owner": "local", **more}


#: features as an image's init_cfg.json has them: a template state, a delayed one
FEATURED_SEED = {
    "FEATURE|snmp": _feature("enabled"),
    "FEATURE|lldp": _feature("disabled", auto_restart="disabled"),
    "FEATURE|bgp": _feature("{% if DEVICE_METADATA['localhost']['type'] == 'LeafRouter' %}enabled"
                            "{% else %}disabled{% endif %}"),
    "FEATURE|mgmt-framework": _feature("enabled", delayed="True"),
}
#: redis-cli arguments, in order: state and auto_restart changes, ports initialized (the delayed
#: feature starts), a feature removed, one added, one whose template renders to no known state
FEATURED_CHANGES = [
    ("-n", "4", "HSET", "FEATURE|lldp", "state", "enabled"),
    ("-n", "4", "HSET", "FEATURE|snmp", "auto_restart", "disabled"),
    ("-n", "4", "HSET", "FEATURE|snmp", "state", "disabled"),
    ("-n", "0", "HSET", "PORT_TABLE:PortInitDone", "lanes", "0"),
    ("-n", "4", "DEL", "FEATURE|lldp"),
    ("-n", "4", "HSET", "FEATURE|dhcp_relay", "state", "always_enabled", "auto_restart", "enabled"),
    ("-n", "4", "HSET", "FEATURE|radv", "state", "{{ 'sometimes' }}"),
]


def scenario_featured(env: Env, result: Result) -> None:
    script = env.trees["host-services"] / "scripts" / "featured"
    run_daemon(env, result, [str(script)], host_services_paths(env), FEATURED_CHANGES)


#: control-plane ACLs (SSH from 10/8), the management and loopback addresses caclmgrd opens
CACLMGRD_SEED = {
    "ACL_TABLE|SSH_ONLY": {"policy_desc": "SSH_ONLY", "type": "CTRLPLANE", "stage": "ingress", "services@": "SSH"},
    "ACL_RULE|SSH_ONLY|RULE_1": {"PRIORITY": "9999", "SRC_IP": "10.0.0.0/8", "PACKET_ACTION": "ACCEPT",
                                 "IP_PROTOCOL": "TCP"},
    "MGMT_INTERFACE|eth0|10.250.0.5/24": {"gwaddr": "10.250.0.1"},
    "LOOPBACK_INTERFACE|Loopback0|10.1.0.1/32": {},
}
#: a rule added and one removed, a table for SNMP and its rules (IPv4 and IPv6), a BFD session
#: (caclmgrd then admits BFD), a VXLAN tunnel's source address
CACLMGRD_CHANGES = [
    ("-n", "4", "HSET", "ACL_RULE|SSH_ONLY|RULE_2", "PRIORITY", "9998", "SRC_IP", "192.168.0.0/16",
     "PACKET_ACTION", "DROP", "IP_PROTOCOL", "TCP"),
    ("-n", "4", "HSET", "ACL_TABLE|SNMP_ACL", "policy_desc", "SNMP_ACL", "type", "CTRLPLANE", "stage", "ingress",
     "services@", "SNMP"),
    ("-n", "4", "HSET", "ACL_RULE|SNMP_ACL|RULE_1", "PRIORITY", "9999", "SRC_IP", "10.1.0.0/16",
     "PACKET_ACTION", "ACCEPT"),
    ("-n", "4", "HSET", "ACL_RULE|SNMP_ACL|RULE_2", "PRIORITY", "9998", "SRC_IPV6", "fc00::/64",
     "PACKET_ACTION", "ACCEPT"),
    ("-n", "4", "DEL", "ACL_RULE|SSH_ONLY|RULE_1"),
    ("-n", "6", "HSET", "BFD_SESSION_TABLE|default|default|10.0.0.2", "state", "Up"),
    ("-n", "4", "HSET", "VXLAN_TUNNEL|vtep1", "src_ip", "10.1.0.1"),
]


def scenario_caclmgrd(env: Env, result: Result) -> None:
    script = env.trees["host-services"] / "scripts" / "caclmgrd"
    run_daemon(env, result, [str(script)], host_services_paths(env), CACLMGRD_CHANGES, between=1.0)


def scenario_procdockerstatsd(env: Env, result: Result) -> None:
    """One round of procdockerstatsd (it then sleeps two minutes): `docker stats` answered by the
    stub, the machine's processes through psutil, FIPS state from /proc."""
    script = env.trees["host-services"] / "scripts" / "procdockerstatsd"
    run_daemon(env, result, [str(script)], host_services_paths(env), [], start=4.0)


def procdockerstatsd_state(redis: dict[str, Any]) -> dict[str, Any]:
    """Redis state with what differs between two runs by nature made comparable: update times
    replaced, the rows of PROCESS_STATS (the namespace's processes, with their pids and CPU times)
    reduced to whether there are any and which fields they have."""
    out: dict[str, Any] = {}
    process_fields: set[str] = set()
    for key, value in redis.items():
        if key.startswith("6/PROCESS_STATS|") and key != "6/PROCESS_STATS|LastUpdateTime":
            process_fields.update(value)
            continue
        if isinstance(value, dict):
            value = {f: "<time>" if f in ("lastupdate", "timestamp") else v for f, v in value.items()}
        out[key] = value
    out["6/PROCESS_STATS|<pid>"] = sorted(process_fields)
    return out


#: rows an earlier round left: procdockerstatsd replaces DOCKER_STATS and PROCESS_STATS whole
PROCDOCKERSTATSD_SEED_DBS = {6: {"DOCKER_STATS|0123456789ab": {"NAME": "gone"},
                                 "PROCESS_STATS|999999": {"CMD": "gone"}}}


#: a leaf router's BGP: a peer on Ethernet0, the loopback bgpcfgd takes the router id from
BGPCFGD_SEED = {
    "LOOPBACK_INTERFACE|Loopback0": {},
    "LOOPBACK_INTERFACE|Loopback0|10.1.0.1/32": {},
    "INTERFACE|Ethernet0": {},
    "INTERFACE|Ethernet0|10.0.0.0/31": {},
    "INTERFACE|Ethernet4": {},
    "INTERFACE|Ethernet4|10.0.0.2/31": {},
    "BGP_NEIGHBOR|10.0.0.1": {"asn": "65200", "name": "ARISTA01T2", "local_addr": "10.0.0.0", "nhopself": "0",
                              "admin_status": "up", "holdtime": "180", "keepalive": "60"},
}
#: a second peer, the first shut down, the second removed, a static route, a BGP monitor
BGPCFGD_CHANGES = [
    ("-n", "4", "HSET", "BGP_NEIGHBOR|10.0.0.3", "asn", "65201", "name", "ARISTA02T2", "local_addr", "10.0.0.2",
     "nhopself", "0", "admin_status", "up", "holdtime", "180", "keepalive", "60"),
    ("-n", "4", "HSET", "BGP_NEIGHBOR|10.0.0.1", "admin_status", "down"),
    ("-n", "4", "DEL", "BGP_NEIGHBOR|10.0.0.3"),
    ("-n", "4", "HSET", "STATIC_ROUTE|default|10.50.0.0/24", "nexthop", "10.0.0.1", "ifname", "Ethernet0"),
    ("-n", "4", "HSET", "BGP_MONITORS|10.20.0.1", "admin_status", "up", "asn", "65100", "holdtime", "180",
     "keepalive", "60", "local_addr", "10.1.0.1", "name", "BGPMonitor", "nhopself", "0", "rrclient", "0"),
]


def scenario_bgpcfgd(env: Env, result: Result) -> None:
    """bgpcfgd with FRR's templates and constants as the image installs them (from the
    sonic-buildimage checkout the bgpcfgd tree is in): vtysh is the stub, so what bgpcfgd pushes
    to FRR (`vtysh -f`) is in its reactions."""
    buildimage = env.trees["bgpcfgd"].parents[1]
    shutil.copytree(buildimage / "dockers" / "docker-fpm-frr" / "frr", "/usr/share/sonic/templates",
                    dirs_exist_ok=True)
    render = "import sys, jinja2; sys.stdout.write(jinja2.Template(open(sys.argv[1]).read()).render())"
    constants = subprocess.run([env.python, "-c", render, str(buildimage / "files" / "build_templates" /
                                                             "constants.yml.j2")],
                               capture_output=True, text=True, check=True).stdout
    Path("/etc/sonic/constants.yml").write_text(constants)
    paths = [env.trees["bgpcfgd"], env.trees["py-common"], env.placeholders()]
    run_daemon(env, result, ["-m", "bgpcfgd"], paths, BGPCFGD_CHANGES, start=4.0, between=1.0)


SCENARIOS = [
    Scenario("featured", ("host-services", "py-common", "utilities"), scenario_featured, seed=FEATURED_SEED),
    Scenario("caclmgrd", ("host-services", "py-common", "utilities"), scenario_caclmgrd, seed=CACLMGRD_SEED),
    Scenario("procdockerstatsd", ("host-services", "py-common", "utilities"), scenario_procdockerstatsd,
             seed_dbs=PROCDOCKERSTATSD_SEED_DBS, normalize=procdockerstatsd_state),
    Scenario("bgpcfgd", ("bgpcfgd", "py-common"), scenario_bgpcfgd, seed=BGPCFGD_SEED),
]
