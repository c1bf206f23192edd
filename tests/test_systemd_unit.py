"""systemd/swssd.service is what the issue asks for, and systemd-analyze accepts it."""

from __future__ import annotations

import configparser
import functools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).parent.parent / "systemd" / "swssd.service"
SONIC_DROP_IN = UNIT.parent / "sonic.conf"


def unit(path: Path = UNIT) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(path)
    return parser


def test_service_settings() -> None:
    svc = unit()["Service"]
    assert svc["Type"] == "notify"
    assert svc["Restart"] == "on-failure"
    assert "-HUP" in svc["ExecReload"]
    assert svc["WatchdogSec"]
    assert svc["NoNewPrivileges"] == "yes"
    assert svc["ProtectSystem"] == "strict"
    assert svc["ProtectHome"] == "yes"
    assert svc["PrivateTmp"] == "yes"
    assert set(svc["RestrictAddressFamilies"].split()) == {"AF_UNIX", "AF_INET", "AF_INET6"}
    assert svc["User"] and svc["User"] != "root"
    assert svc["StateDirectory"] and svc["LogsDirectory"]
    assert "swssd run" in svc["ExecStart"]
    assert svc["SyslogIdentifier"] == "swssd"  # journalctl -t swssd; priorities come from the <N> prefixes
    assert svc.get("SyslogLevelPrefix", "yes") == "yes"


def test_sonic_drop_in_orders_after_database_service() -> None:
    drop_in = unit(SONIC_DROP_IN)
    assert drop_in.sections() == ["Unit"]
    assert drop_in["Unit"]["After"].split() == ["database.service"]
    assert drop_in["Unit"]["Requires"].split() == ["database.service"]


def _systemd_analyze() -> str | None:
    found = shutil.which("systemd-analyze")
    if found:
        return found
    if shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-qq", "systemd"], capture_output=True, timeout=300)
    return shutil.which("systemd-analyze")


def test_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = _systemd_analyze()
    if analyze is None:
        pytest.skip("systemd-analyze is not installed and the systemd package could not be installed here")
    swssd_bin = Path(sys.executable).parent / "swssd"
    # The repository's systemd/ folder as it is (a swssd.service.d/ beside the unit would be read
    # too), with ExecStart pointed at this environment's entry point: verify checks that it exists.
    folder = tmp_path / "systemd"
    shutil.copytree(UNIT.parent, folder)
    copy = folder / "swssd.service"
    assert "ExecStart=/usr/local/bin/swssd " in copy.read_text()  # where pip installs it as root
    copy.write_text(copy.read_text().replace("/usr/local/bin/swssd", str(swssd_bin)))
    result = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "swssd.service" not in result.stderr, result.stderr


def test_systemd_analyze_verify_with_the_sonic_drop_in(tmp_path: Path) -> None:
    analyze = _systemd_analyze()
    if analyze is None:
        pytest.skip("systemd-analyze is not installed and the systemd package could not be installed here")
    swssd_bin = Path(sys.executable).parent / "swssd"
    # The drop-in's settings merged into the unit: what systemd reads on a SONiC switch.
    text = UNIT.read_text().replace("/usr/local/bin/swssd", str(swssd_bin))
    text = text.replace("[Service]", SONIC_DROP_IN.read_text().replace("[Unit]", "") + "\n[Service]", 1)
    copy = tmp_path / "swssd.service"
    copy.write_text(text)
    # SONiC's database.service, as a stand-in beside it: Requires= needs the unit to exist.
    (tmp_path / "database.service").write_text("[Service]\nType=oneshot\nExecStart=/bin/true\n")
    result = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "swssd.service" not in result.stderr, result.stderr


def settings(name: str, path: Path = UNIT) -> list[str]:
    """Every value given to `name` in [Service] (systemd adds up repeated list settings)."""
    values, section = [], ""
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[Service]" and line.startswith(f"{name}="):
            values.append(line.partition("=")[2])
    return values


def test_hardening_settings() -> None:
    svc = unit()["Service"]
    assert svc["UMask"] == "0077"
    assert svc["StateDirectoryMode"] == svc["LogsDirectoryMode"] == "0700"
    assert settings("SystemCallFilter")[0] == "@system-service"
    assert svc["SystemCallErrorNumber"] == "EPERM"
    assert settings("IPAddressAllow") == ["localhost"] and settings("IPAddressDeny") == ["any"]
    assert svc["PrivateMounts"] == "yes" and svc["ProtectProc"] == "invisible"
    assert "IPAddressAllow=" in UNIT.read_text().split("IPAddressAllow=localhost")[0]  # how to widen it
    assert not settings("ReadWritePaths")  # a unix socket is connected to without write access to its mount


@functools.cache
def security_report() -> str:
    """`systemd-analyze security` of the unit, run once for the tests that read it."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    result = subprocess.run([analyze, "security", "--offline=yes", "--no-pager", str(UNIT)],
                            capture_output=True, text=True, timeout=120)
    return result.stdout + result.stderr


def exposure() -> float:
    report = security_report()
    found = re.search(r"Overall exposure level for swssd\.service: (\d+\.\d+)", report)
    assert found, report
    return float(found.group(1))


def test_systemd_analyze_security_exposure_at_most_2() -> None:
    assert exposure() <= 2.0, security_report()


def test_zmq_resources_and_the_ipc_directory() -> None:
    """Issue 27: the docs' ipc endpoint can be bound under ProtectSystem=strict, and the
    descriptors, memory and tasks are bounded (the daemon keeps descriptors back for Redis)."""
    svc = unit()["Service"]
    assert svc["RuntimeDirectory"] == "swssd"  # /run/swssd, for ipc:///run/swssd/zmq
    page = (UNIT.parent.parent / "docs" / "plugins.md").read_text()
    assert "ipc:///run/swssd/zmq" in page
    assert int(svc["LimitNOFILE"]) >= 4096 + 256  # [daemon] zmq_max_peers' default and the reserve
    assert svc["MemoryMax"] and svc["MemoryMax"] != "infinity"
    assert int(svc["TasksMax"]) >= 64


def test_systemd_analyze_security_exposure_at_most_1_1() -> None:
    assert exposure() <= 1.1, security_report()
