"""The commands sonic_tools_suite.py's programs run (systemctl, iptables, docker, vtysh, ...):
stubs on PATH that log their arguments to $STUB_LOG and answer what the programs ask, so what a
program ran is its reaction, the same on both sides."""

from __future__ import annotations

from pathlib import Path

#: commands replaced by stubs that log their arguments and succeed silently unless ANSWERS says more
STUBS = ("systemctl", "service", "sudo", "hostname", "iptables", "ip6tables", "ip", "sysctl", "modprobe",
         "logger", "timedatectl", "chronyc", "ntpq", "docker", "pkill", "killall", "usermod", "useradd",
         "iptables-restore", "ip6tables-restore", "iptables-save", "ip6tables-save", "vtysh")
#: shell that runs after the log line, with the stubs' directory in $STUBS
ANSWERS = {
    # like sudo: run the command (a stub when there is one)
    "sudo": 'if [ -x "$STUBS/$1" ]; then exec "$STUBS/$@"; fi\n',
    # procdockerstatsd's `docker stats --no-stream -a`: two containers, columns 3+ spaces apart
    "docker": (
        'if [ "$1" = stats ]; then\n'
        "  echo 'CONTAINER ID   NAME       CPU %     MEM USAGE / LIMIT     MEM %     NET I/O         "
        "BLOCK I/O         PIDS'\n"
        "  echo '0e2d5f5a6b7c   database   1.25%     52.3MiB / 7.7GiB      0.66%     0B / 0B         "
        "4.1kB / 8.19kB    9'\n"
        "  echo '5c6d7e8f9a0b   swss       0.50%     31.5MB / 7.7GiB       0.40%     12KB / 1.5MB    "
        "0B / 0B           31'\n"
        'fi\n'),
    # FRR's routes for route_check: one BGP route, offloaded (a route not offloaded makes it
    # wait 3 x 15 s for FRR)
    # bgpcfgd's: its daemons there, the default VRF without peers, an empty running config
    "vtysh": (
        'case "$*" in\n'
        '  *"show ip route json"*) echo \'{"10.10.0.0/24": [{"protocol": "bgp", "vrfName": "default", '
        '"selected": true, "offloaded": true}], "10.0.0.0/31": [{"protocol": "connected", "vrfName": "default", '
        '"selected": true}]}\' ;;\n'
        '  *"show daemons"*) echo " zebra bgpd staticd mgmtd" ;;\n'
        '  *"show bgp vrfs json"*) echo \'{"vrfs": {"default": {}}}\' ;;\n'
        '  *" json"*) echo \'{}\' ;;\n'
        '  *"show running-config"*) echo "!" ;;\n'
        'esac\n'),
    # unit file states kept beside the log (every unit starts disabled), for featured's
    # `show UNIT --property UnitFileState` and `is-active UNIT`
    "systemctl": (
        'units="$STUB_LOG.units"; mkdir -p "$units"\n'
        'case "$1" in\n'
        '  enable) echo enabled > "$units/$2" ;;\n'
        '  disable|unmask) echo disabled > "$units/$2" ;;\n'
        '  mask) echo masked > "$units/$2" ;;\n'
        '  show) echo "UnitFileState=$(cat "$units/$2" 2>/dev/null || echo disabled)" ;;\n'
        '  is-active) [ "$(cat "$units/$2" 2>/dev/null)" = enabled ] && echo active || echo inactive ;;\n'
        'esac\n'),
}


#: the log line, where the arguments alone do not say what was done: `vtysh -f FILE` (bgpcfgd
#: pushing configuration through a temporary file) logs the file's text
LOG_LINES = {
    "vtysh": ('if [ "$1" = -f ]; then echo "vtysh -f <file>:"; sed "s/^/  /" "$2"; '
              'else echo "vtysh $*"; fi >> "$STUB_LOG"\n'),
}


def write_stubs(scratch: Path, python: str) -> Path:
    """The stubs in scratch/stubs, with `python3` and `python` running the programs' interpreter
    (for their own scripts: #!/usr/bin/env python3, sonic-cfggen's python)."""
    stubs = scratch / "stubs"
    stubs.mkdir()
    for name in STUBS:
        path = stubs / name
        log = LOG_LINES.get(name, f'echo "{name} $*" >> "$STUB_LOG"\n')
        path.write_text(f'#!/bin/sh\n{log}STUBS="{stubs}"\n{ANSWERS.get(name, "")}exit 0\n')
        path.chmod(0o755)
    for name in ("python3", "python"):
        python_wrapper(stubs / name, python)
    return stubs


def python_wrapper(path: Path, python: str) -> None:
    path.write_text(f'#!/bin/sh\nexec {python} "$@"\n')
    path.chmod(0o755)
