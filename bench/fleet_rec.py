"""A fleet's SONiC swss.rec recordings, generated: the input of bench_replay_baselines.py.

Each host is a directory (`sw1/`, `sw2/` ...) holding what logrotate leaves of orchagent's
recording: `swss.rec` (the live file), `swss.rec.1` (rotated, not yet compressed: delaycompress)
and `swss.rec.2.gz`, `swss.rec.3.gz` ... (older, gzipped). The oldest starts with a `recording
started` line. The lines are what orchagent writes: APPL_DB tables as `TABLE:key`, CONFIG_DB
tables as `TABLE|key`, then `|SET|field:value|...` or `|DEL`; ROUTE_TABLE the busiest (many
prefixes, next hops that change), neighbours, ports and VLAN members after it; a few keys flap.
"""

from __future__ import annotations

import gzip
import random
import time
from collections.abc import Callable
from pathlib import Path

START_US = 1_795_737_600_000_000  # 2026-11-27T00:00:00Z
STEP_US = 250  # between two consecutive lines of one host
FILE_BYTES = 16 * 1024 * 1024  # logrotate's size trigger

# (table, separator, share of the lines, number of keys)
TABLES = [
    ("ROUTE_TABLE", ":", 0.46, 20_000),
    ("NEIGH_TABLE", ":", 0.14, 4_000),
    ("PORT_TABLE", ":", 0.10, 128),
    ("LAG_MEMBER_TABLE", ":", 0.05, 256),
    ("VLAN_MEMBER_TABLE", ":", 0.06, 2_000),
    ("INTF_TABLE", ":", 0.05, 600),
    ("BUFFER_QUEUE_TABLE", ":", 0.04, 1_024),
    ("PORT", "|", 0.04, 128),
    ("VLAN_MEMBER", "|", 0.03, 2_000),
    ("ACL_RULE", "|", 0.03, 500),
]
DEL_SHARE = 0.1


def rec_ts(us: int) -> str:
    s, frac = divmod(us, 1_000_000)
    return time.strftime("%Y-%m-%d.%H:%M:%S", time.gmtime(s)) + f".{frac:06d}"


def _key(rng: random.Random, table: str, n: int) -> str:
    i = rng.randrange(n)
    if table == "ROUTE_TABLE":
        return f"10.{i // 256 % 256}.{i % 256}.0/24" if i % 5 else f"fc00:{i:x}::/64"
    if table == "NEIGH_TABLE":
        return f"Vlan{1000 + i % 8}:192.168.{i // 256 % 256}.{i % 256}"
    if table in ("PORT_TABLE", "PORT"):
        return f"Ethernet{4 * i}"
    if table == "LAG_MEMBER_TABLE":
        return f"PortChannel{i % 16:04d}:Ethernet{4 * i}"
    if table in ("VLAN_MEMBER_TABLE", "VLAN_MEMBER"):
        sep = ":" if table.endswith("_TABLE") else "|"
        return f"Vlan{1000 + i % 16}{sep}Ethernet{4 * (i // 16)}"
    if table == "INTF_TABLE":
        return f"Ethernet{4 * i}:10.{i % 256}.0.1/31"
    if table == "BUFFER_QUEUE_TABLE":
        return f"Ethernet{4 * (i // 8)}:{i % 8}"
    return f"DATAACL|RULE_{i}"


def _fields(rng: random.Random, table: str) -> str:
    if table == "ROUTE_TABLE":
        hops = sorted(rng.sample(range(1, 65), rng.randint(1, 4)))
        return ("nexthop:" + ",".join(f"10.0.0.{2 * h + 1}" for h in hops)
                + "|ifname:" + ",".join(f"Ethernet{4 * h}" for h in hops))
    if table == "NEIGH_TABLE":
        return f"neigh:00:11:22:{rng.randrange(256):02x}:{rng.randrange(256):02x}:01|family:IPv4"
    if table in ("PORT_TABLE", "PORT"):
        return (f"admin_status:{rng.choice(('up', 'down'))}|oper_status:{rng.choice(('up', 'down'))}"
                f"|mtu:{rng.choice(('1500', '9100'))}|speed:100000")
    if table == "BUFFER_QUEUE_TABLE":
        return "profile:[BUFFER_PROFILE_TABLE:egress_lossless_profile]"
    if table == "ACL_RULE":
        return f"PRIORITY:{rng.randrange(9999)}|PACKET_ACTION:{rng.choice(('DROP', 'FORWARD'))}|SRC_IP:10.0.0.1/32"
    return "tagging_mode:untagged" if "VLAN" in table else "NULL:NULL"


def _line(rng: random.Random, us: int) -> str:
    roll = rng.random()
    table, sep, _, keys = TABLES[-1]
    for choice in TABLES:
        roll -= choice[2]
        if roll < 0:
            table, sep, _, keys = choice
            break
    head = f"{rec_ts(us)}|{table}{sep}{_key(rng, table, keys)}"
    if rng.random() < DEL_SHARE:
        return head + "|DEL"
    return f"{head}|SET|{_fields(rng, table)}"


def write_rotated(directory: Path, base: str, lines: list[str], gzipped: Callable[[int, int], bool],
                  file_bytes: int = FILE_BYTES) -> None:
    """`lines` as logrotate leaves them: files of about `file_bytes`, the newest `base`, older ones
    base.1, base.2 ...; `gzipped(age, files)` says which are compressed (as base.N.gz)."""
    chunks: list[list[str]] = [[]]
    size = 0
    for line in lines:
        if size + len(line) + 1 > file_bytes and chunks[-1]:
            chunks.append([])
            size = 0
        chunks[-1].append(line)
        size += len(line) + 1
    directory.mkdir(parents=True, exist_ok=True)
    for age, chunk in enumerate(reversed(chunks)):
        data = ("\n".join(chunk) + "\n").encode()
        name = base + (f".{age}" if age else "")
        if gzipped(age, len(chunks)):
            (directory / f"{name}.gz").write_bytes(gzip.compress(data, compresslevel=6))
        else:
            (directory / name).write_bytes(data)


def generate(root: Path, events: int, hosts: int = 4, seed: int = 1, step_us: int = STEP_US) -> None:
    """`events` SET/DEL lines over `hosts` hosts (plus one marker each), `step_us` apart on a host."""
    rng = random.Random(seed)
    per_host = events // hosts
    for h in range(1, hosts + 1):
        us = START_US + h * 1_000
        lines = [f"{rec_ts(us)}|recording started"]
        for _ in range(per_host):
            lines.append(_line(rng, us))
            us += step_us
        # delaycompress: the newest rotated file stays plain
        write_rotated(root / f"sw{h}", "swss.rec", lines, lambda age, _files: age >= 2)
