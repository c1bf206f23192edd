"""Run unmodified SONiC Python programs once on the real swsscommon binding and once on swssd's
compatible layer, and compare what they did: exit status, output, the Redis state they leave, and
the commands a daemon ran in reaction to a CONFIG_DB change.

    python tests/sonic_tools_suite.py --binding ENV_SH [--utilities DIR] [--host-services DIR]
        [--py-common DIR] [--config-engine DIR] [--python PY] [--only NAME] [--keep DIR]

The trees are checkouts of sonic-net/sonic-utilities, sonic-net/sonic-host-services and
sonic-buildimage's src/sonic-py-common and src/sonic-config-engine (also from $SONIC_UTILITIES_TREE,
$SONIC_HOST_SERVICES_TREE, $SONIC_PY_COMMON_TREE, $SONIC_CONFIG_ENGINE_TREE); nothing is fetched. A
scenario runs when the trees it needs are given. `--python` is an interpreter with the programs'
own dependencies (click, natsort, tabulate, netaddr, psutil, jinja2, lxml, python-ldap...).

Each run happens in a private network and mount namespace (unshare, as root): its own loopback, a
tmpfs on /var/run/redis holding SONiC's default database_config.json and a redis-server on
127.0.0.1:6379 and /var/run/redis/redis.sock, so nothing of the machine's is touched. Commands a
program runs (systemctl, service, ...) are stubs on PATH that log their arguments.

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
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SKIP = 77
SOCKET_DIR = "/var/run/redis"
SOCKET = f"{SOCKET_DIR}/redis.sock"
#: seconds a program's step may take
STEP_TIMEOUT = 60
#: the databases of a single-ASIC SONiC image's database_config.json
DATABASES = {
    "APPL_DB": (0, ":"), "ASIC_DB": (1, ":"), "COUNTERS_DB": (2, ":"), "LOGLEVEL_DB": (3, ":"),
    "CONFIG_DB": (4, "|"), "PFC_WD_DB": (5, ":"), "FLEX_COUNTER_DB": (5, ":"), "STATE_DB": (6, "|"),
    "SNMP_OVERLAY_DB": (7, "|"), "RESTAPI_DB": (8, "|"), "GB_ASIC_DB": (9, ":"), "GB_COUNTERS_DB": (10, ":"),
    "GB_FLEX_COUNTER_DB": (11, ":"), "APPL_STATE_DB": (14, ":"),
}
#: commands the daemons run, replaced by stubs that log their arguments and succeed
STUBS = ("systemctl", "service", "sudo", "hostname", "iptables", "ip6tables", "ip", "sysctl", "modprobe",
         "logger", "timedatectl", "chronyc", "ntpq", "docker", "pkill", "killall", "usermod", "useradd")
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


@dataclass
class Env:
    """Where a run's programs come from and how they are started."""

    python: str
    trees: dict[str, Path]
    mode: str                    # "binding" or "layer"
    binding_env: str
    scratch: Path
    stub_log: Path

    def command(self, argv: list[str], paths: list[Path]) -> tuple[list[str], dict[str, str]]:
        """`python argv...` with `swsscommon` the binding's or the layer's and `paths` importable."""
        extra = os.pathsep.join(str(p) for p in paths)
        env = dict(os.environ, PATH=f"{self.scratch / 'stubs'}{os.pathsep}{os.environ['PATH']}",
                   STUB_LOG=str(self.stub_log), PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0")
        if self.mode == "layer":
            env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "compat"), str(ROOT), extra])
            return [self.python, *argv], env
        env["PYTHONPATH"] = os.pathsep.join([str(self.scratch / "binding_shim"), extra])
        script = 'source "$0" && exec "$1" "${@:2}"'  # the env file puts the binding first on PYTHONPATH
        return ["bash", "-c", script, self.binding_env, self.python, *argv], env


@dataclass
class Result:
    """What one scenario did on one side."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    redis: dict[str, Any] = field(default_factory=dict)
    reactions: list[str] = field(default_factory=list)


@dataclass
class Scenario:
    name: str
    needs: tuple[str, ...]
    run: Callable[[Env, Result], None]
    seed: dict[str, dict[str, str]] = field(default_factory=dict)


# -- Redis ----------------------------------------------------------------------------------------

def redis_cli(*args: str) -> str:
    return subprocess.run(["redis-cli", "-s", SOCKET, *args], capture_output=True, text=True, check=True).stdout


def reset_redis(seed: dict[str, dict[str, str]]) -> None:
    """FLUSHALL, then the base config and the scenario's rows in CONFIG_DB, marked initialized as
    a switch's is once its config is loaded."""
    redis_cli("FLUSHALL")
    redis_cli("-n", "4", "SET", "CONFIG_DB_INITIALIZED", "1")
    for key, fields in {**BASE_CONFIG, **seed}.items():
        redis_cli("-n", "4", "HSET", key, *(x for fv in fields.items() for x in fv))


def dump_redis() -> dict[str, Any]:
    """Every key of every database with its value ("db/key" -> value), in one document."""
    sys.path.insert(0, str(ROOT))
    import redis as redis_py  # the test extra's client, only to read the state back

    out: dict[str, Any] = {}
    for db in range(16):
        client: Any = redis_py.Redis(unix_socket_path=SOCKET, db=db, decode_responses=True)
        for key in sorted(client.keys("*")):
            readers: dict[str, Callable[[str], Any]] = {
                "hash": lambda k: dict(sorted(client.hgetall(k).items())),
                "set": lambda k: sorted(client.smembers(k)),
                "list": lambda k: client.lrange(k, 0, -1),
                "string": client.get,
                "zset": lambda k: client.zrange(k, 0, -1, withscores=True)}
            out[f"{db}/{key}"] = readers[str(client.type(key))](key)
        client.close()
    return out


# -- steps ----------------------------------------------------------------------------------------

def run_step(env: Env, result: Result, argv: list[str], paths: list[Path], cwd: Path | None = None) -> None:
    command, proc_env = env.command(argv, paths)
    try:
        done = subprocess.run(command, cwd=cwd or env.scratch, env=proc_env, capture_output=True, text=True,
                              timeout=STEP_TIMEOUT)
        rc: int | str = done.returncode
        out, err = done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = "timed out", _text(exc.stdout), _text(exc.stderr)
    result.steps.append({"argv": argv[1:] if argv[0] == "-c" else argv, "rc": rc, "stdout": out,
                         "stderr_tail": err[-800:]})


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else data or ""


def python_snippet(env: Env, result: Result, code: str, paths: list[Path]) -> None:
    run_step(env, result, ["-c", code], paths)


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
]


def scenario_hostcfgd(env: Env, result: Result) -> None:
    """hostcfgd's listen loop: started on the base config, then each change in CONFIG_DB; what it
    ran (the stubs' log) is its reaction. The files it writes land in the run's overlay on /etc.
    python-ldap, which it imports but does not use for these tables, is an empty module when the
    interpreter has none (it does not build without the OpenLDAP headers)."""
    paths = [env.trees["host-services"] / "scripts", env.trees["host-services"], env.trees["py-common"],
             env.trees["utilities"], env.scratch / "deps_shim"]
    (env.scratch / "deps_shim").mkdir()
    if subprocess.run([env.python, "-c", "import ldap"], capture_output=True).returncode != 0:
        (env.scratch / "deps_shim" / "ldap.py").write_text('"""python-ldap is not installed here."""\n')
    if subprocess.run([env.python, "-c", "import M2Crypto"], capture_output=True).returncode != 0:
        # sonic_installer's Aboot bootloader imports it; hostcfgd only asks which bootloader runs
        (env.scratch / "deps_shim" / "M2Crypto.py").write_text('"""M2Crypto is not installed here."""\nX509 = None\n')
    script = env.trees["host-services"] / "scripts" / "hostcfgd"
    # the image's templates are not in these trees: empty ones, so rendering runs and writes empty files
    for template in set(re.findall(r"/usr/share/sonic/templates/[\w.-]+\.j2", script.read_text())):
        Path(template).parent.mkdir(parents=True, exist_ok=True)
        Path(template).touch()
    command, proc_env = env.command([str(script)], paths)
    daemon = subprocess.Popen(command, cwd=env.scratch, env=proc_env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        time.sleep(4)
        for change in HOSTCFGD_CHANGES:
            redis_cli("-n", "4", *change)
            time.sleep(1.5)
        time.sleep(2)
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        try:
            out, err = daemon.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
            out, err = daemon.communicate()
    result.steps.append({"argv": ["hostcfgd"], "running_at_end": daemon.returncode in (-15, 0, 143),
                         "stdout": out, "stderr_tail": err[-1500:]})


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


# -- the namespace --------------------------------------------------------------------------------

def write_stubs(scratch: Path) -> None:
    stubs = scratch / "stubs"
    stubs.mkdir()
    for name in STUBS:
        path = stubs / name
        path.write_text(f'#!/bin/sh\necho "{name} $*" >> "$STUB_LOG"\nexit 0\n')
        path.chmod(0o755)


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


def inside(args: argparse.Namespace) -> int:
    """In the namespaces: loopback, tmpfs, redis-server, then each scenario on both sides."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", SOCKET_DIR], check=True)
    os.makedirs(f"{SOCKET_DIR}/sonic-db")
    os.makedirs(f"{SOCKET_DIR}/etc-upper")
    os.makedirs(f"{SOCKET_DIR}/etc-work")
    # what the daemons write under /etc stays in this namespace (an overlay whose upper layer is the tmpfs)
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                    f"lowerdir=/etc,upperdir={SOCKET_DIR}/etc-upper,workdir={SOCKET_DIR}/etc-work", "/etc"], check=True)
    Path(f"{SOCKET_DIR}/sonic-db/database_config.json").write_text(json.dumps(database_config()))
    os.makedirs("/etc/sonic", exist_ok=True)  # in the overlay: what a SONiC image's build writes
    Path("/etc/sonic/sonic_version.yml").write_text(SONIC_VERSION)
    Path("/etc/sonic/init_cfg.json").write_text("{}")
    for layer_dir in ("share-upper", "share-work"):
        os.makedirs(f"{SOCKET_DIR}/{layer_dir}")
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                    f"lowerdir=/usr/share,upperdir={SOCKET_DIR}/share-upper,workdir={SOCKET_DIR}/share-work",
                    "/usr/share"], check=True)
    sys.path.insert(0, str(ROOT))
    from swssd.redis.embedded_redis import find_redis_server

    server = subprocess.Popen([
        find_redis_server(), "--port", "6379", "--bind", "127.0.0.1", "--unixsocket", SOCKET,
        "--unixsocketperm", "777", "--databases", "16", "--notify-keyspace-events", "AKE", "--save", "",
        "--appendonly", "no", "--loglevel", "warning"], stdout=subprocess.DEVNULL)
    trees = {k: Path(v) for k, v in json.loads(args.trees).items()}
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
                    write_stubs(scratch)
                    write_binding_shim(scratch)
                    env = Env(args.python, trees, mode, args.binding, scratch, scratch / "stubs.log")
                    reset_redis(scenario.seed)
                    result = Result()
                    scenario.run(env, result)
                    result.redis = dump_redis()
                    result.reactions = env.stub_log.read_text().splitlines() if env.stub_log.exists() else []
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
    if binding.reactions != layer.reactions:
        problems.append(f"reactions differ:\n  binding: {binding.reactions}\n  layer:   {layer.reactions}")
    failed_both = [s["argv"] for s in binding.steps if s.get("rc") not in (0, None)]
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for mode, result in results.items():
            Path(keep, f"{name}.{mode}.json").write_text(json.dumps(result.__dict__, indent=1, sort_keys=True))
    status = "DIFFERS" if problems else "same"
    print(f"{name}: {status} ({len(binding.steps)} steps, {len(binding.redis)} keys, "
          f"{len(binding.reactions)} reactions; steps failing on the binding too: {failed_both})")
    for problem in problems[:20]:
        print("  " + problem.replace("\n", "\n  "))
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--binding", default=os.environ.get("SWSSD_SWSSCOMMON_ENV"),
                        help="env file of the built binding (default $SWSSD_SWSSCOMMON_ENV)")
    for name, var in (("utilities", "SONIC_UTILITIES_TREE"), ("host-services", "SONIC_HOST_SERVICES_TREE"),
                      ("py-common", "SONIC_PY_COMMON_TREE"), ("config-engine", "SONIC_CONFIG_ENGINE_TREE")):
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
    trees = {name: str(Path(value).resolve()) for name in ("utilities", "host-services", "py-common", "config-engine")
             if (value := getattr(args, name.replace("-", "_")))}
    if not trees:
        return skip("no SONiC tree given (--utilities, --host-services, --py-common, --config-engine or their "
                    "$SONIC_*_TREE variables)")
    if not args.binding or not Path(args.binding).exists():
        return skip("no built binding to compare with (--binding or $SWSSD_SWSSCOMMON_ENV)")
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
