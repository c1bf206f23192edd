"""Run unmodified SONiC Python programs once on the real swsscommon binding and once on swssd's
compatible layer, and compare what they did: exit status, output, the Redis state they leave, the
commands they ran (a daemon's reactions to CONFIG_DB changes) and the files they wrote.

    python tests/sonic_tools_suite.py --binding ENV_SH [--utilities DIR] [--host-services DIR]
        [--py-common DIR] [--config-engine DIR] [--yang-mgmt DIR] [--platform-common DIR]
        [--bgpcfgd DIR] [--python PY] [--only NAME] [--keep DIR]

The trees are checkouts of sonic-net/sonic-utilities, sonic-net/sonic-host-services,
sonic-net/sonic-platform-common and sonic-buildimage's src/sonic-py-common, src/sonic-config-engine,
src/sonic-yang-mgmt and src/sonic-bgpcfgd (the last inside a whole sonic-buildimage checkout: FRR's
templates and constants.yml come from it); also from the $SONIC_*_TREE variables of TREES; nothing
is fetched. A scenario runs when the trees it needs are given. `--python` is an interpreter with the
programs' own dependencies (click, natsort, tabulate, netaddr, psutil, jinja2, lxml, ijson,
pyyaml, bitarray...); modules that need absent C libraries (python-ldap, M2Crypto, libyang) are placeholders
where the paths run do not use them.

Each run happens in a private network and mount namespace (unshare, as root): its own loopback, a
tmpfs on /var/run/redis holding SONiC's default database_config.json and a redis-server on
127.0.0.1:6379 and /var/run/redis/redis.sock, and overlays on /etc, /usr/share and /usr/local/bin
laid afresh for each side's run, so nothing of the machine's is touched. Commands a program runs
(systemctl, docker, vtysh, iptables, ...) are stubs on PATH that log their arguments and answer what
the programs ask (sonic_tools_stubs.py); the scenarios are in sonic_tools_cli.py and
sonic_tools_daemons.py besides the first four here.

The binding built here has no YANG models, so its cfg_schema.h is empty; a SONiC image's binding
has a CFG_<TABLE>_TABLE_NAME for every YANG table. For the binding runs those names are added to
its module from swssd/compat/cfg_schema.py (generated from the same models), as the image has them.

Exit status: 0 when every scenario that ran behaved the same on both, 1 when one differed, 77 with
the reason on stderr when nothing could run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sonic_tools_cli import SCENARIOS as CLI_SCENARIOS
from sonic_tools_daemons import SCENARIOS as DAEMON_SCENARIOS
from sonic_tools_steps import (
    ROOT,
    SOCKET,
    SOCKET_DIR,
    Env,
    Result,
    Scenario,
    python_snippet,
    redis_cli,
    run_daemon,
    run_step,
)
from sonic_tools_stubs import python_wrapper, write_stubs

SKIP = 77
#: the checkouts a scenario may need, by option name, with the variable that also gives them
TREES = {"utilities": "SONIC_UTILITIES_TREE", "host-services": "SONIC_HOST_SERVICES_TREE",
         "py-common": "SONIC_PY_COMMON_TREE", "config-engine": "SONIC_CONFIG_ENGINE_TREE",
         "yang-mgmt": "SONIC_YANG_MGMT_TREE", "platform-common": "SONIC_PLATFORM_COMMON_TREE",
         "bgpcfgd": "SONIC_BGPCFGD_TREE"}
#: the databases of a single-ASIC SONiC image's database_config.json
DATABASES = {
    "APPL_DB": (0, ":"), "ASIC_DB": (1, ":"), "COUNTERS_DB": (2, ":"), "LOGLEVEL_DB": (3, ":"),
    "CONFIG_DB": (4, "|"), "PFC_WD_DB": (5, ":"), "FLEX_COUNTER_DB": (5, ":"), "STATE_DB": (6, "|"),
    "SNMP_OVERLAY_DB": (7, "|"), "RESTAPI_DB": (8, "|"), "GB_ASIC_DB": (9, ":"), "GB_COUNTERS_DB": (10, ":"),
    "GB_FLEX_COUNTER_DB": (11, ":"), "APPL_STATE_DB": (14, ":"),
}
#: /etc/sonic/sonic_version.yml as an image has it (db_migrator reads the ASIC type there)
SONIC_VERSION = "build_version: 'swssd-tools-suite'\nasic_type: vs\ncommit_id: '0'\nbuild_date: ''\nbuilt_by: ''\n"
#: CONFIG_DB rows every scenario starts from: what a single-ASIC switch's minimal config holds
BASE_CONFIG = {
    "DEVICE_METADATA|localhost": {"hostname": "sw1", "hwsku": "Force10-S6000", "platform": "x86_64-dell_s6000_s1220-r0",
                                  "mac": "00:11:22:33:44:55", "type": "LeafRouter", "bgp_asn": "65100"},
    "PORT|Ethernet0": {"lanes": "29,30,31,32", "alias": "fortyGigE0/0", "speed": "40000", "mtu": "9100",
                       "admin_status": "up", "index": "0"},
    "PORT|Ethernet4": {"lanes": "25,26,27,28", "alias": "fortyGigE0/4", "speed": "40000", "mtu": "9100",
                       "admin_status": "up", "index": "1"},
    "FLEX_COUNTER_TABLE|PORT": {"FLEX_COUNTER_STATUS": "enable", "POLL_INTERVAL": "1000"},
    "FLEX_COUNTER_TABLE|QUEUE": {"FLEX_COUNTER_STATUS": "enable"},
}


# -- Redis ----------------------------------------------------------------------------------------

def reset_redis(scenario: Scenario) -> None:
    """FLUSHALL, then the base config and the scenario's rows in CONFIG_DB, marked initialized as
    a switch's is once its config is loaded, and its rows in the other databases."""
    redis_cli("FLUSHALL")
    redis_cli("-n", "4", "SET", "CONFIG_DB_INITIALIZED", "1")
    for db, rows in {4: {**BASE_CONFIG, **scenario.seed}, **scenario.seed_dbs}.items():
        for key, fields in rows.items():
            # an empty row is stored as ConfigDBConnector stores one: NULL: NULL
            redis_cli("-n", str(db), "HSET", key, *(x for fv in (fields or {"NULL": "NULL"}).items() for x in fv))


def dump_redis() -> dict[str, Any]:
    """Every key of every database with its value ("db/key" -> value), in one document."""
    sys.path.insert(0, str(ROOT))
    import redis as redis_py  # the test extra's client, only to read the state back

    out: dict[str, Any] = {}
    for db in range(16):
        client: Any = redis_py.Redis(unix_socket_path=SOCKET, db=db, decode_responses=True)
        for key in sorted(client.keys("*")):
            out[f"{db}/{key}"] = _read(client, key)
        client.close()
    return out


def _read(client: Any, key: str) -> Any:
    """A key's value in a form that compares: hashes and sets sorted."""
    kind = client.type(key)
    if kind == "hash":
        return dict(sorted(client.hgetall(key).items()))
    if kind == "set":
        return sorted(client.smembers(key))
    if kind == "list":
        return client.lrange(key, 0, -1)
    if kind == "zset":
        return client.zrange(key, 0, -1, withscores=True)
    return client.get(key)


# -- scenarios ------------------------------------------------------------------------------------

PY_COMMON_SNIPPET = """
from sonic_py_common import device_info, multi_asic
print("platform", device_info.get_platform())
print("hwsku", device_info.get_hwsku())
print("localhost", sorted((device_info.get_localhost_info("hostname") or "").split()))
print("multi_asic", multi_asic.is_multi_asic(), multi_asic.get_num_asics())
print("namespaces", multi_asic.get_namespace_list(), multi_asic.get_all_namespaces())
print("ports", sorted(multi_asic.get_port_table().keys()))
print("port_entry", multi_asic.get_port_entry_for_asic("Ethernet0", ""))
print("frontend", multi_asic.is_port_internal("Ethernet0"))
"""


def scenario_py_common(env: Env, result: Result) -> None:
    python_snippet(env, result, PY_COMMON_SNIPPET, [env.trees["py-common"]])


def scenario_counterpoll(env: Env, result: Result) -> None:
    paths = [env.trees["utilities"], env.trees["py-common"]]
    cli = "import sys; from counterpoll.main import cli; sys.argv[0] = 'counterpoll'; cli()"
    for args in (["show"], ["port", "enable"], ["port", "interval", "5000"], ["queue", "disable"],
                 ["rif", "enable"], ["watermark", "interval", "20000"], ["show"]):
        run_step(env, result, ["-c", cli, *args], paths)


def scenario_db_migrator(env: Env, result: Result) -> None:
    paths = [env.trees["utilities"], env.trees["utilities"] / "scripts", env.trees["py-common"],
             env.trees["config-engine"]]
    script = str(env.trees["utilities"] / "scripts" / "db_migrator.py")
    for args in (["-o", "get_version"], ["-o", "migrate"], ["-o", "get_version"]):
        run_step(env, result, [script, *args], paths)


HOSTCFGD_CHANGES = [
    ("HSET", "NTP|global", "src_intf", "eth0"),
    ("HSET", "SYSLOG_SERVER|10.0.0.5", "port", "514"),
    ("HSET", "FEATURE|snmp", "state", "disabled"),
    ("HSET", "DEVICE_METADATA|localhost", "hostname", "sw2"),
    ("HSET", "KDUMP|config", "enabled", "true"),
    ("HSET", "AAA|authentication", "login", "tacacs+,local"),
    ("HSET", "TACPLUS_SERVER|10.0.0.8", "priority", "1", "tcp_port", "49"),
    ("HSET", "RADIUS|global", "auth_type", "pap", "timeout", "5"),
    ("HSET", "LOOPBACK_INTERFACE|Loopback0|10.1.0.1/32", "NULL", "NULL"),
    ("HSET", "MGMT_INTERFACE|eth0|10.250.0.5/24", "gwaddr", "10.250.0.1"),
    ("HSET", "DNS_NAMESERVER|10.0.0.53", "NULL", "NULL"),
    ("HSET", "NTP_SERVER|10.0.0.123", "association_type", "server", "iburst", "on"),
    ("HSET", "BANNER_MESSAGE|global", "state", "enabled", "motd", "hello"),
    ("HSET", "SSH_SERVER|POLICIES", "max_sessions", "5", "ports", "22,2222"),
    ("HDEL", "SYSLOG_SERVER|10.0.0.5", "port"),
    ("DEL", "TACPLUS_SERVER|10.0.0.8"),
    ("DEL", "NTP_SERVER|10.0.0.123"),
]

def scenario_hostcfgd(env: Env, result: Result) -> None:
    """hostcfgd's listen loop: started on the base config, then each change in CONFIG_DB; what it
    ran (the stubs' log) is its reaction. The files it writes land in the run's overlay on /etc."""
    paths = [env.trees["host-services"] / "scripts", env.trees["host-services"], env.trees["py-common"],
             env.trees["utilities"], env.placeholders()]
    script = env.trees["host-services"] / "scripts" / "hostcfgd"
    # the image's templates are not in these trees: empty ones, so rendering runs and writes empty files
    for template in set(re.findall(r"/usr/share/sonic/templates/[\w.-]+\.j2", script.read_text())):
        Path(template).parent.mkdir(parents=True, exist_ok=True)
        Path(template).touch()
    run_daemon(env, result, [str(script)], paths, [("-n", "4", *change) for change in HOSTCFGD_CHANGES])


SCENARIOS = [
    Scenario("py_common", ("py-common",), scenario_py_common),
    Scenario("counterpoll", ("utilities", "py-common"), scenario_counterpoll),
    Scenario("db_migrator", ("utilities", "py-common", "config-engine"), scenario_db_migrator,
             seed={"VERSIONS|DATABASE": {"VERSION": "version_1_0_1"},
                   "VLAN|Vlan100": {"vlanid": "100", "members@": "Ethernet0"},
                   "VLAN_MEMBER|Vlan100|Ethernet0": {"tagging_mode": "untagged"},
                   "INTERFACE|Ethernet4|10.0.0.1/31": {}}),
    Scenario("hostcfgd", ("host-services", "py-common", "utilities"), scenario_hostcfgd),
]
SCENARIOS += CLI_SCENARIOS + DAEMON_SCENARIOS


# -- the namespace --------------------------------------------------------------------------------

def write_binding_shim(scratch: Path) -> None:
    """A sitecustomize that gives the binding the CFG_* names a SONiC image's build generates."""
    shim = scratch / "binding_shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import runpy\n"
        "try:\n"
        "    from swsscommon import swsscommon as _s\n"
        "except ImportError:\n"
        "    _s = None\n"
        "if _s is not None:\n"
        f"    for _k, _v in runpy.run_path({str(ROOT / 'swssd' / 'compat' / 'cfg_schema.py')!r}).items():\n"
        "        if _k.startswith('CFG_') and _k.endswith('_TABLE_NAME') and not hasattr(_s, _k):\n"
        "            setattr(_s, _k, _v)\n"
    )


def database_config() -> dict[str, Any]:
    return {
        "INSTANCES": {"redis": {"hostname": "127.0.0.1", "port": 6379, "unix_socket_path": SOCKET}},
        "DATABASES": {name: {"id": i, "separator": sep, "instance": "redis"} for name, (i, sep) in DATABASES.items()},
        "VERSION": "1.0",
    }


#: directories the programs write to, overlaid afresh for each side's run
OVERLAID = ("/etc", "/usr/share", "/usr/local/bin")


def lay_image(run: str, python: str, trees: dict[str, Path]) -> dict[str, str]:
    """Fresh overlays on OVERLAID for one side's run (whose upper layers are in the namespace's
    tmpfs, so what an earlier run wrote is gone) holding the files a SONiC image's build puts
    there; returns those files, so that what the run itself writes can be told apart."""
    for directory in OVERLAID:
        subprocess.run(["umount", directory], capture_output=True)  # the previous run's, if any
        layer = f"{SOCKET_DIR}/overlay/{run}{directory.replace('/', '-')}"
        os.makedirs(f"{layer}/upper")
        os.makedirs(f"{layer}/work")
        subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                        f"lowerdir={directory},upperdir={layer}/upper,workdir={layer}/work", directory], check=True)
    os.makedirs("/etc/sonic", exist_ok=True)
    Path("/etc/sonic/sonic_version.yml").write_text(SONIC_VERSION)
    Path("/etc/sonic/init_cfg.json").write_text("{}")
    os.makedirs("/etc/ssh", exist_ok=True)  # hostcfgd edits sshd's configuration for SSH_SERVER
    Path("/etc/ssh/sshd_config").write_text("Port 22\nMaxAuthTries 6\nLoginGraceTime 120\nClientAliveInterval 900\n")
    metadata = BASE_CONFIG["DEVICE_METADATA|localhost"]  # the device directory an image installs, empty
    os.makedirs(f"/usr/share/sonic/device/{metadata['platform']}/{metadata['hwsku']}")
    # config's auto_techsupport_helper puts /usr/local/bin and /usr/sbin first on PATH: the
    # programs' scripts run by it (#!/usr/bin/env python3) find the programs' interpreter there too
    for name in ("python3", "python"):
        python_wrapper(Path("/usr/local/bin", name), python)
    if "config-engine" in trees:  # config loads it from where the image installs it
        shutil.copy(trees["config-engine"] / "sonic-cfggen", "/usr/local/bin/sonic-cfggen")
    return written_files(run)


def written_files(run: str) -> dict[str, str]:
    """What the upper layers of a run's overlays hold: path -> text ("<deleted>" for a whiteout)."""
    out: dict[str, str] = {}
    for directory in OVERLAID:
        upper = Path(f"{SOCKET_DIR}/overlay/{run}{directory.replace('/', '-')}/upper")
        for path in sorted(upper.rglob("*")):
            name = directory + "/" + str(path.relative_to(upper))
            if path.is_char_device():
                out[name] = "<deleted>"
            elif path.is_file():
                out[name] = path.read_bytes()[:4000].decode(errors="replace")
    return out


def inside(args: argparse.Namespace) -> int:
    """In the namespaces: loopback, tmpfs, redis-server, then each scenario on both sides."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", SOCKET_DIR], check=True)
    os.makedirs(f"{SOCKET_DIR}/sonic-db")
    Path(f"{SOCKET_DIR}/sonic-db/database_config.json").write_text(json.dumps(database_config()))
    trees = {k: Path(v) for k, v in json.loads(args.trees).items()}
    sys.path.insert(0, str(ROOT))
    from swssd.redis.embedded_redis import find_redis_server

    server = subprocess.Popen([
        find_redis_server(), "--port", "6379", "--bind", "127.0.0.1", "--unixsocket", SOCKET,
        "--unixsocketperm", "777", "--databases", "16", "--notify-keyspace-events", "AKE", "--save", "",
        "--appendonly", "no", "--loglevel", "warning"], stdout=subprocess.DEVNULL)
    differed = 0
    try:
        for _ in range(100):
            if os.path.exists(SOCKET):
                break
            time.sleep(0.05)
        for scenario in SCENARIOS:
            if args.only and scenario.name not in args.only:
                continue
            missing = [n for n in scenario.needs if n not in trees]
            if missing:
                print(f"{scenario.name}: skipped: no {', '.join(missing)} tree given")
                continue
            results = {}
            for mode in ("binding", "layer"):
                with tempfile.TemporaryDirectory(prefix=f"tools-{scenario.name}-{mode}-") as scratch_dir:
                    scratch = Path(scratch_dir)
                    write_stubs(scratch, args.python)
                    write_binding_shim(scratch)
                    env = Env(args.python, trees, mode, args.binding, scratch, scratch / "stubs.log")
                    image = lay_image(f"{scenario.name}-{mode}", args.python, trees)
                    reset_redis(scenario)
                    result = Result()
                    scenario.run(env, result)
                    result.files = {path: text for path, text in written_files(f"{scenario.name}-{mode}").items()
                                    if image.get(path) != text}
                    result.redis = dump_redis()
                    if scenario.normalize:
                        result.redis = scenario.normalize(result.redis)
                    result.reactions = env.stub_log.read_text().splitlines() if env.stub_log.exists() else []
                    if not scenario.ordered_reactions:
                        result.reactions.sort()
                    results[mode] = result
            differed += report(scenario.name, results, args.keep)
    finally:
        server.terminate()
        server.wait()
    return 1 if differed else 0


def report(name: str, results: dict[str, Result], keep: str | None) -> int:
    """Print the comparison; 1 when the two sides differ."""
    binding, layer = results["binding"], results["layer"]
    problems = []
    for i, (b, lay) in enumerate(zip(binding.steps, layer.steps)):
        for key in ("rc", "stdout", "running_at_end"):
            if b.get(key) != lay.get(key):
                problems.append(f"step {i} {b['argv']}: {key} differs:\n  binding: {b.get(key)!r}\n"
                                f"  layer:   {lay.get(key)!r}\n  binding stderr: {b['stderr_tail']!r}\n"
                                f"  layer stderr:   {lay['stderr_tail']!r}")
    keys = sorted(set(binding.redis) | set(layer.redis))
    for key in keys:
        if binding.redis.get(key) != layer.redis.get(key):
            problems.append(f"redis {key}: binding {binding.redis.get(key)!r} layer {layer.redis.get(key)!r}")
    for path in sorted(set(binding.files) | set(layer.files)):
        if binding.files.get(path) != layer.files.get(path):
            problems.append(f"file {path}: binding {binding.files.get(path)!r} layer {layer.files.get(path)!r}")
    if binding.reactions != layer.reactions:
        problems.append(f"reactions differ:\n  binding: {binding.reactions}\n  layer:   {layer.reactions}")
    failed_both = [s["argv"] for s in binding.steps if s.get("rc") not in (0, None)]
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for mode, result in results.items():
            Path(keep, f"{name}.{mode}.json").write_text(json.dumps(result.__dict__, indent=1, sort_keys=True))
    status = "DIFFERS" if problems else "same"
    print(f"{name}: {status} ({len(binding.steps)} steps, {len(binding.redis)} keys, "
          f"{len(binding.reactions)} reactions, {len(binding.files)} files written; "
          f"steps failing on the binding too: {failed_both})")
    for problem in problems[:20]:
        print("  " + problem.replace("\n", "\n  "))
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--binding", default=os.environ.get("SWSSD_SWSSCOMMON_ENV"),
                        help="env file of the built binding (default $SWSSD_SWSSCOMMON_ENV)")
    for name, var in TREES.items():
        parser.add_argument(f"--{name}", default=os.environ.get(var), help=f"a checkout (default ${var})")
    parser.add_argument("--python", default=os.environ.get("SONIC_TOOLS_PYTHON", sys.executable),
                        help="interpreter with the programs' dependencies (default $SONIC_TOOLS_PYTHON)")
    parser.add_argument("--only", action="append", help="run only this scenario (repeatable)")
    parser.add_argument("--keep", help="write each side's results as JSON into this directory")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--trees", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inside:
        return inside(args)
    trees = {name: str(Path(value).resolve()) for name in TREES if (value := getattr(args, name.replace("-", "_")))}
    if not trees:
        return skip("runs unmodified SONiC programs, which come from their source checkouts: give them with "
                    f"--{', --'.join(TREES)} (or $SONIC_<NAME>_TREE, e.g. $SONIC_UTILITIES_TREE; "
                    "docs/porting.md says which)")
    if not args.binding or not Path(args.binding).exists():
        return skip("compares each program on swssd with the same on sonic-swss-common's built Python binding: "
                    "give the binding's env file (a shell file exporting its PYTHONPATH and LD_LIBRARY_PATH) "
                    "with --binding or $SWSSD_SWSSCOMMON_ENV")
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip") or not shutil.which("redis-cli"):
        return skip("needs root with unshare, ip and redis-cli, for a private redis-server")
    probe = subprocess.run(["unshare", "--net", "--mount", "--fork", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return skip(f"cannot make a private network namespace here: {probe.stderr.strip() or probe.returncode}")
    command = ["unshare", "--net", "--mount", "--fork", sys.executable, __file__, "--inside", "--trees",
               json.dumps(trees), "--binding", args.binding, "--python", args.python]
    for name in args.only or []:
        command += ["--only", name]
    if args.keep:
        command += ["--keep", str(Path(args.keep).resolve())]
    return subprocess.run(command).returncode


def skip(reason: str) -> int:
    print(f"sonic_tools_suite: skipped: {reason}", file=sys.stderr)
    return SKIP


if __name__ == "__main__":
    sys.exit(main())
